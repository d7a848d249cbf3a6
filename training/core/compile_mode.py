"""How a run compiles its steps: `train.jit_compile`, `train.steps_per_execution`.

`train.jit_compile` is `"auto"` (the default), `true` or `false`. `"auto"`
is `zoo.default_jit_compile` at the shape of one step (units, batch, padded
length): a rule, not a timing trial, so the same command on the same machine
always makes the same choice (and so gives the same numbers). On a CPU it
compiles every cell up to `CPU_XLA_MAX_UNITS` units at any length (with the
zoo's TensorFlow loop XLA was at least as fast as the graph at every
measured width and length up to 512 units, and level at 1024) and leaves
wider cells to the graph; with a GPU it always compiles; on JAX Keras does.

A run records its choice and the reason in `metrics.json` (`jit_compile`)
and in its backup, and a resumed run keeps the choice its first part made.
Keras refuses XLA while TensorFlow's op determinism is on, so
`configure_determinism` turns it on for graph runs (exact resumption) and
off for XLA runs, whose compiled program is itself repeatable on one machine.

`train.steps_per_execution` is `"auto"` (the default) or N: how many
training steps one call of Keras's train function runs (`model.compile`'s
`steps_per_execution`), so that Keras's Python loop, the callbacks' batch
hooks and the read-back of the loss come once a group instead of once a
step. The steps and their results are the same (tested bitwise); callbacks
see the batches at group ends only. `"auto"` is `choose_steps`: groups of up
to `AUTO_STEPS` for a small step compiled with XLA on TensorFlow, where
that per-step work is a large share of a step; 1 otherwise. A run records
it beside `jit_compile` (`steps_per_execution`), and a resumed run keeps it.
"""

import collections
import hashlib
import importlib.metadata
import json
import math
import os
import platform
from pathlib import Path

import keras

import zoo
from training.core.task_protocol import TrainableTask
from zoo.devices import gpu_visible
from zoo.models import CPU_XLA_LIMIT, CPU_XLA_MAX_UNITS

# `train.jit_compile`'s values.
SETTINGS = ("auto", True, False)

Choice = collections.namedtuple("Choice", ["used", "reason"])
Choice.__doc__ = """What is used (XLA: a bool; steps per execution: an int) and why."""

# The most steps a call that `train.steps_per_execution="auto"` groups.
AUTO_STEPS = 32


def _cpuinfo(key):
    """The first value of `key` in /proc/cpuinfo, or None where there is none."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip().lower() == key and value.strip():
                return value.strip()
    except OSError:
        pass
    return None


def cpu_name():
    """The CPU model this process runs on, as /proc/cpuinfo names it."""
    return (
        _cpuinfo("model name")
        or platform.processor()
        or platform.machine()
        or "unknown CPU"
    )


# The vector instructions that change a CPU's float arithmetic and speed;
# two hosts that /proc/cpuinfo both calls "AMD EPYC" can differ here.
CPU_FEATURES = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")


def cpu_features():
    """Those of `CPU_FEATURES` this CPU has, in that order ([] if unknown)."""
    flags = set((_cpuinfo("flags") or "").split())
    return [name for name in CPU_FEATURES if name in flags]


def xla_cache_flags(directory, environ=None):
    """`TF_XLA_FLAGS` that keep TensorFlow's compiled XLA programs in `directory`.

    A process started with them (TensorFlow reads the variable when it
    starts) loads a program compiled by an earlier one instead of compiling
    it again: the runs of a reproduction table compile the same programs,
    seed after seed. TensorFlow names each file by fingerprints of the
    program and its signature but not of the compiler's settings or the
    machine, so the files' names begin with a fingerprint of those
    (TensorFlow's version, the CPU and its `CPU_FEATURES`, `XLA_FLAGS`): a
    program compiled for another CPU or with other XLA flags is never
    loaded. A loaded program is the compiled one, so training gives the
    same numbers bitwise (tests/training/core/compile_mode_test.py).
    `--tf_xla_persistent_cache_directory` is TensorFlow's own flag
    (tensorflow/compiler/jit/flags.cc), not in its documentation.

    Args:
        directory: The folder of the compiled programs (made on first use).
        environ: The environment the process starts with (default
            `os.environ`); its `TF_XLA_FLAGS` are kept in front.
    """
    environ = os.environ if environ is None else environ
    try:
        version = importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        version = None
    settings = {
        "tensorflow": version,
        "cpu": cpu_name(),
        "cpu_features": cpu_features(),
        "XLA_FLAGS": environ.get("XLA_FLAGS", ""),
        "TF_XLA_FLAGS": environ.get("TF_XLA_FLAGS", ""),
    }
    key = json.dumps(settings, sort_keys=True).encode()
    prefix = "zoo_" + hashlib.sha256(key).hexdigest()[:16]
    flags = (
        f"--tf_xla_persistent_cache_directory={Path(directory).resolve()} "
        f"--tf_xla_persistent_cache_prefix={prefix}"
    )
    return f"{settings['TF_XLA_FLAGS']} {flags}".strip()


def choose(setting, units, batch, length):
    """The `Choice` for `train.jit_compile=setting` for one step's shape.

    Args:
        setting: One of `SETTINGS`.
        units: The model's hidden size (per layer).
        batch: The rows of one step's input.
        length: The padded sequence length of one step's input.
    """
    if isinstance(setting, bool):
        return Choice(setting, f"train.jit_compile={str(setting).lower()}")
    if setting != "auto":
        raise ValueError(
            f"jit_compile must be 'auto', true or false; received {setting!r}."
        )
    backend = keras.backend.backend()
    if backend != "tensorflow":
        used = backend == "jax"  # what Keras's own "auto" does there
        return Choice(used, f"auto: Keras's choice on the {backend} backend")
    used = zoo.default_jit_compile(units, batch, length)
    if gpu_visible():
        return Choice(used, "auto: a GPU is visible")
    relation = "<=" if used else ">"
    return Choice(used, f"auto: on a CPU, units {units} {relation} {CPU_XLA_MAX_UNITS}")


def for_task(task: TrainableTask):
    """The `Choice` for a task's training step (`task.train_shape()`)."""
    recipe = task.recipe
    return choose(recipe.train.jit_compile, recipe.model.units, *task.train_shape())


def choose_steps(setting, jit_compile, shape, steps_per_epoch=None, divide=()):
    """The `Choice` of `train.steps_per_execution=setting` (`used`: an int).

    `"auto"` is 1 on a backend other than TensorFlow (Keras calls each step
    from Python there), without XLA (a graph run steps as it always did), for
    a step with `batch x units x length > CPU_XLA_LIMIT` (its own work dwarfs
    the per-step overhead) and for epochs of unknown length (Keras stops each
    later epoch at the count of steps it tried in the first, which groups
    round up to a whole group, so they would change the run); otherwise the
    largest count up to `AUTO_STEPS` and `steps_per_epoch` that divides
    every number of `divide`. A curriculum's epochs differ in length but
    each is known (`Task.epoch_steps`; `training.core.fitting.fit_epoch_lengths`
    tells Keras each): `steps_per_epoch` is then the shortest epoch's.

    Args:
        setting: `"auto"` or an int >= 1.
        jit_compile: Whether the steps are compiled with XLA.
        shape: `(units, batch, length)` of one training step.
        steps_per_epoch: The steps of an epoch (the shortest, where they
            differ), or None if unknown.
        divide: Counts a group must divide (`train.max_steps_per_epoch`,
            whose repeated data Keras reads in whole groups, and
            `train.reset_every`, whose resets come between groups).
    """
    if setting != "auto":
        if type(setting) is not int or setting < 1:
            raise ValueError(
                "steps_per_execution must be 'auto' or an integer >= 1; "
                f"received {setting!r}."
            )
        return Choice(setting, f"train.steps_per_execution={setting}")
    backend = keras.backend.backend()
    if backend != "tensorflow":
        return Choice(1, f"auto: one step a call on the {backend} backend")
    if not jit_compile:
        return Choice(1, "auto: one step a call without XLA")
    units, batch, length = shape
    size = batch * units * length
    sizes = f"batch x units x length = {batch} x {units} x {length} = {size}"
    if size > CPU_XLA_LIMIT:
        return Choice(1, f"auto: one step a call, {sizes} > {CPU_XLA_LIMIT}")
    if steps_per_epoch is None:
        return Choice(1, "auto: one step a call, the epoch's steps unknown")
    common = math.gcd(*divide)  # 0 (divided by every count) when there is none
    most = min(AUTO_STEPS, steps_per_epoch)
    used = max(n for n in range(1, most + 1) if common % n == 0)
    return Choice(used, f"auto: XLA on a small step, {sizes} <= {CPU_XLA_LIMIT}")


def steps_for_task(task: TrainableTask, jit_compile):
    """The `Choice` of the task's `train.steps_per_execution` (`choose_steps`).

    `"auto"` is 1 under `train.distribute` other than `"none"` (which
    `training.tasks.recipes` refuses a count above 1 with).
    """
    recipe = task.recipe
    train = recipe.train
    if train.steps_per_execution == "auto" and train.distribute != "none":
        reason = f"auto: one step a call with train.distribute={train.distribute}"
        return Choice(1, reason)
    epoch_steps = task.epoch_steps()
    if train.max_steps_per_epoch:
        steps = train.max_steps_per_epoch
    elif epoch_steps is not None:  # a curriculum's: the shortest epoch's
        steps = min(epoch_steps)
    else:
        dataset, _ = task.train_data()
        steps = int(dataset.cardinality())
    divide = [train.max_steps_per_epoch, train.reset_every]
    return choose_steps(
        train.steps_per_execution,
        jit_compile,
        (recipe.model.units, *task.train_shape()),
        steps if steps > 0 else None,  # cardinality -1 or -2: infinite, unknown
        [count for count in divide if count is not None],
    )


def configure_determinism(jit_compile):
    """TensorFlow's op determinism on for graph steps, off for XLA steps.

    Keras refuses `jit_compile=True` while op determinism is on (it warns
    and runs the graph instead); XLA's compiled program is repeatable on one
    machine on its own. Other backends are left alone.
    """
    if keras.backend.backend() != "tensorflow":
        return
    import tensorflow as tf
    from tensorflow.python.framework import config as tf_config

    if jit_compile:
        # TensorFlow exports only the enabling half; this is its other half.
        tf_config.disable_op_determinism()
    else:
        tf.config.experimental.enable_op_determinism()


def apply(model, jit_compile):
    """Sets `model.jit_compile` for the next functions Keras makes for it.

    For a model that is not compiled (evaluation, prediction); `fit` compiles
    with the choice instead. Raises if Keras did not take it.
    """
    configure_determinism(jit_compile)
    model.jit_compile = bool(jit_compile)
    check_applied(model, jit_compile)


def check_applied(model, jit_compile):
    """A `RuntimeError` if Keras turned a requested XLA off (no silent fallback)."""
    if bool(jit_compile) and model.jit_compile is not True:
        raise RuntimeError(
            "Keras refused jit_compile=True for this model (a layer without XLA "
            "support, or op determinism on); expected XLA as train.jit_compile "
            "chose. Set train.jit_compile=false to run without it."
        )
