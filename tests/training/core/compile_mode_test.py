import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.training.tiny import LSTM_RECOGNIZER, RECIPE_OF, TINY, tiny_recipe
from tests.zoo.backend_processes import quiet_environment
from training import train
from training.core import compile_mode, fitting
from training.data import batching
from training.runs import runs
from training.tasks import make_task, recipes

# The tiny recognition task's curriculum at half its split scale, an LSTM
# recognizer's (XLA compiles its steps).
CURRICULUM = ["train.curriculum=true", "task.split_scale=0.005", *LSTM_RECOGNIZER]


@pytest.mark.parametrize("value", ["auto", True, False])
def test_recipes_take_auto_true_and_false(value):
    recipe = tiny_recipe("dyck", extra=[f"train.jit_compile={str(value).lower()}"])
    assert recipe.train.jit_compile == value


def test_recipes_default_to_auto():
    # dyck2_lstm does not name the key; tiny_dyck_lstm turns XLA off itself.
    assert recipes.resolve("dyck2_lstm").train.jit_compile == "auto"
    assert recipes.resolve("tiny_dyck_lstm").train.jit_compile is False


@pytest.mark.parametrize("value", ["yes", "1", "null", "[1]", "1.0"])
def test_other_jit_compile_values_are_one_line_errors(value, no_data):
    with pytest.raises(recipes.RecipeError, match="jit_compile") as info:
        tiny_recipe("dyck", extra=[f"train.jit_compile={value}"])
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_choose_refuses_other_settings(bad):
    with pytest.raises(ValueError, match="'auto', true or false"):
        compile_mode.choose(bad, 8, 32, 55)


def test_a_forced_setting_is_kept_whatever_the_size():
    forced = compile_mode.choose(True, 1024, 32, 2048)
    assert forced == (True, "train.jit_compile=true")
    assert compile_mode.choose(False, 8, 32, 16) == (False, "train.jit_compile=false")


def test_auto_on_a_cpu_compiles_cells_up_to_the_unit_limit_at_any_length():
    assert compile_mode.CPU_XLA_MAX_UNITS == 512
    small = compile_mode.choose("auto", 8, 32, 56)
    assert small == (True, "auto: on a CPU, units 8 <= 512")
    # Long loops and wide steps too: the zoo's TensorFlow loop keeps XLA's
    # compiled loop linear in the length (benchmarks/log.md).
    assert compile_mode.choose("auto", 32, 32, 2048).used
    assert compile_mode.choose("auto", 512, 128, 1024).used
    wide = compile_mode.choose("auto", 513, 32, 16)
    assert wide == (False, "auto: on a CPU, units 513 > 512")


def test_auto_keeps_the_character_language_models_off_xla():
    # The shipped PTB character models (977 and 991 units) are past the
    # widths where XLA measured faster (level at 1024 units).
    for name in ("ptb_char_lstm", "ptb_char_mlstm"):
        recipe = recipes.resolve(name, "paper")
        train, units = recipe.train, recipe.model.units
        length = recipe.task.sequence_length
        assert not compile_mode.choose("auto", units, train.batch_size, length).used
        # evaluation: 10 rows, windows of 8 x the training length
        assert not compile_mode.choose("auto", units, 10, 8 * length).used


def test_task_train_shape_is_the_batch_and_padded_length(text_file):
    for kind in TINY:
        task = make_task(tiny_recipe(kind, text_file))
        data, _ = task.train_data()
        inputs = next(iter(data))[0]
        assert inputs.shape == task.train_shape()


@pytest.mark.parametrize("kind", sorted(TINY))
def test_every_batch_of_every_epoch_has_one_shape(kind, text_file):
    # A fully defined element spec is one input shape: XLA compiles once.
    task = make_task(tiny_recipe(kind, text_file))
    data, _ = task.train_data()
    for spec in [*tf.nest.flatten(data.element_spec)]:
        assert spec.shape.is_fully_defined(), (kind, spec)
    for spec in tf.nest.flatten(task.validation_data().element_spec):
        assert spec.shape.is_fully_defined(), (kind, spec)


class TraceCount(keras.callbacks.Callback):
    """The number of times the train and test steps were traced, per epoch."""

    def __init__(self, model):
        super().__init__()
        self.traces = {"train": 0, "test": 0}
        self.per_epoch = []
        for name in self.traces:
            step = getattr(model, f"{name}_step")
            setattr(model, f"{name}_step", self.counting(name, step))

    def counting(self, name, step):
        def traced(data):
            self.traces[name] += 1  # Python runs only while a step is traced
            return step(data)

        return traced

    def on_epoch_end(self, epoch, logs=None):
        self.per_epoch.append(dict(self.traces))


def test_a_compiled_run_traces_each_step_once_in_every_epoch():
    # Curriculum: a different number of strings in each epoch, the case where
    # a last partial batch would change shape from epoch to epoch.
    recipe = tiny_recipe(
        "recognition",
        extra=[*CURRICULUM, "train.epochs=4", "train.batch_size=8"],
    )
    assert make_task(recipe).epoch_steps() == (3, 3, 3, 3)  # of 26, then 31
    task = make_task(recipe)
    keras.utils.set_random_seed(0)
    model = task.build_model()
    count = TraceCount(model)
    fitting.fit(model, task, callbacks=[count], jit_compile=True)
    assert model.jit_compile is True
    # (TensorFlow may trace a step twice on its first call, when it creates
    # variables; never again after the first epoch.)
    assert count.per_epoch[0]["train"] >= 1 and count.per_epoch[0]["test"] >= 1
    assert count.per_epoch == [count.per_epoch[0]] * 4


@pytest.fixture(scope="module")
def auto_run(tmp_path_factory):
    """The tiny Dyck recipe (two epochs) under `train.jit_compile=auto`, its
    run's metrics and the calls of `batching.epoch_shuffled` (the tasks'
    dataset builder) the run made: one XLA run for the tests that read it."""
    recipe = tiny_recipe("dyck", extra=["train.jit_compile=auto"])
    calls, build = [], batching.epoch_shuffled
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(
            batching,
            "epoch_shuffled",
            lambda *a, **k: calls.append(1) or build(*a, **k),
        )
        metrics = runs.train_run(recipe, tmp_path_factory.mktemp("auto") / "run")
    return recipe, metrics, calls


def test_one_run_makes_its_training_data_once(auto_run):
    # `compile_mode` reads the data's shape and length, `fit` trains on them.
    _, metrics, calls = auto_run
    assert calls == [1]
    assert metrics[runs.JIT_COMPILE]["used"]


def test_a_run_records_its_choice_and_a_resume_keeps_it(auto_run):
    recipe, metrics, _ = auto_run
    task = make_task(recipe)
    assert runs.compile_choice(task).used  # 8 units: XLA by the rule
    kept = {"facts": {"jit_compile": {"used": False, "reason": "first part"}}}
    assert runs.compile_choice(task, kept) == (False, "first part")
    kept = {"facts": {"steps_per_execution": {"used": 5, "reason": "first part"}}}
    assert runs.steps_choice(task, True, kept) == (5, "first part")
    assert metrics["jit_compile"] == {
        "used": True,
        "reason": compile_mode.for_task(task).reason,
    }
    # 48 strings in batches of 16: all 3 steps of an epoch in one call
    assert metrics["steps_per_execution"] == {
        "used": 3,
        "reason": "auto: XLA on a small step, batch x units x length = "
        f"16 x 8 x {task.train_shape()[1]} = {16 * 8 * task.train_shape()[1]} "
        f"<= {compile_mode.CPU_XLA_LIMIT}",
    }


@pytest.mark.parametrize("value", ["auto", 1, 7])
def test_recipes_take_auto_and_positive_step_counts(value):
    extra = [f"train.steps_per_execution={value}"]
    assert tiny_recipe("dyck", extra=extra).train.steps_per_execution == value


@pytest.mark.parametrize("value", ["0", "-2", "true", "1.0", "null", "all", "[2]"])
def test_other_steps_per_execution_values_are_one_line_errors(value, no_data):
    with pytest.raises(recipes.RecipeError, match="steps_per_execution") as info:
        tiny_recipe("dyck", extra=[f"train.steps_per_execution={value}"])
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["train.max_steps_per_epoch=10"], "must divide train.max_steps_per_epoch=10"),
        (
            ["train.stateful=true", "train.reset_every=6"],
            "must divide train.reset_every=6",
        ),
        (["train.distribute=mirrored"], "not supported with train.distribute"),
    ],
)
def test_step_groups_that_cannot_run_are_one_line_errors(extra, message, no_data):
    kind = "language_model" if "train.stateful=true" in extra else "dyck"
    overrides = ["train.steps_per_execution=4", *extra]
    with pytest.raises(recipes.RecipeError, match=message) as info:
        tiny_recipe(kind, "corpus.txt", extra=overrides)
    assert "\n" not in str(info.value)
    # a count that divides them passes (mirrored takes only "auto" or 1)
    if "train.distribute=mirrored" not in extra:
        dividing = [o.replace("=4", "=2") for o in overrides]
        tiny_recipe(kind, "corpus.txt", extra=dividing)


def test_auto_groups_small_compiled_steps_only():
    small = (8, 16, 56)  # units, batch, length
    assert compile_mode.choose_steps("auto", True, small, 1000) == (
        compile_mode.AUTO_STEPS,
        "auto: XLA on a small step, batch x units x length = 16 x 8 x 56 = 7168 "
        f"<= {compile_mode.CPU_XLA_LIMIT}",
    )
    assert compile_mode.choose_steps("auto", True, small, 3).used == 3
    # a group divides the repeated data's epoch and the state resets
    assert compile_mode.choose_steps("auto", True, small, 100, [100]).used == 25
    assert compile_mode.choose_steps("auto", True, small, 1000, [36, 24]).used == 12
    assert compile_mode.choose_steps("auto", True, small, 1000, [37]).used == 1
    graph = compile_mode.choose_steps("auto", False, small, 1000)
    assert graph == (1, "auto: one step a call without XLA")
    large = compile_mode.choose_steps("auto", True, (128, 32, 256), 1000)
    assert large.used == 1 and "1048576 > 524288" in large.reason
    unknown = compile_mode.choose_steps("auto", True, small, None)
    assert unknown == (1, "auto: one step a call, the epoch's steps unknown")


def test_a_step_count_is_kept_whatever_the_step():
    forced = compile_mode.choose_steps(8, False, (1024, 32, 2048), None)
    assert forced == (8, "train.steps_per_execution=8")
    for bad in (0, True, "8", None):
        with pytest.raises(ValueError, match="'auto' or an integer >= 1"):
            compile_mode.choose_steps(bad, True, (8, 16, 56), 10)


def test_auto_steps_one_a_call_under_a_distribution_strategy():
    task = make_task(tiny_recipe("dyck", extra=["train.distribute=mirrored"]))
    choice = compile_mode.steps_for_task(task, True)
    assert choice == (1, "auto: one step a call with train.distribute=mirrored")


# dyck: 3 steps an epoch in groups of 2, the last group of each epoch
# partial, Keras's own groups in the graph; a curriculum's epochs of 6, then
# 7 steps in groups of 2 (fitting.fit_epoch_lengths: a fit call for each
# length), the last group of each later epoch partial, the zoo's XLA groups.
# (A dyck run with XLA takes the same grouped train function as the
# curriculum's.)


@pytest.mark.parametrize(
    ("kind", "extra", "jit"),
    [
        ("dyck", [], False),
        ("recognition", [*CURRICULUM, "train.epochs=4", "train.batch_size=4"], True),
    ],
)
def test_a_run_in_groups_ends_bitwise_equal_to_one_step_a_call(
    tmp_path, kind, extra, jit
):
    base = ["train.epochs=2", *extra, f"train.jit_compile={str(jit).lower()}"]
    if extra:
        task = make_task(tiny_recipe(kind, extra=base))
        assert task.epoch_steps() == (6, 7, 7, 7)
    for steps in (1, 2):
        overrides = [*base, f"train.steps_per_execution={steps}"]
        runs.train_run(tiny_recipe(kind, extra=overrides), tmp_path / str(steps))
    one, two = tmp_path / "1", tmp_path / "2"
    assert (one / runs.LOG).read_text() == (two / runs.LOG).read_text()
    metrics = [runs.read_json(path / runs.METRICS) for path in (one, two)]
    assert metrics[0].pop("steps_per_execution")["used"] == 1
    assert metrics[1].pop("steps_per_execution")["used"] == 2
    # with XLA the groups run as one compiled program (zoo.ZooModel.make_train_function)
    assert metrics[0].pop(runs.GROUPED_STEPS)["used"] is False
    assert metrics[1].pop(runs.GROUPED_STEPS)["used"] is jit
    assert metrics[0] == metrics[1]
    weights = [runs.load_run(path).model.get_weights() for path in (one, two)]
    for a, b in zip(*weights, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["dyck", "recognition"])
def test_compiled_padded_evaluation_equals_the_graphs(kind):
    # Under XLA a split is predicted padded to 256 rows and 64 steps; the
    # models are causal, so every metric equals the unpadded graph's.
    task = make_task(tiny_recipe(kind))
    keras.utils.set_random_seed(0)
    weights = task.build_model().get_weights()
    results = {}
    for jit in (True, False):
        recipe = tiny_recipe(kind, extra=[f"train.jit_compile={str(jit).lower()}"])
        model = task.with_recipe(recipe).build_model()
        model.set_weights(weights)
        results[jit] = task.with_recipe(recipe).evaluate(model, "test")
        assert model.jit_compile is jit
    for key, value in results[False].items():
        if isinstance(value, float):
            assert results[True][key] == pytest.approx(value, abs=1e-5), key
        else:
            assert results[True][key] == value, key


def test_cpu_features_are_the_known_flags_this_cpu_has_in_order():
    features = compile_mode.cpu_features()
    assert features == [name for name in compile_mode.CPU_FEATURES if name in features]
    flags = [
        line.partition(":")[2].split()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.partition(":")[0].strip() == "flags"
    ]
    if flags:  # Linux: exactly the listed names that the kernel reports
        expected = [name for name in compile_mode.CPU_FEATURES if name in flags[0]]
        assert features == expected


def test_xla_cache_flags_name_the_folder_and_a_key_of_the_compilers_settings(
    tmp_path,
):
    flags = compile_mode.xla_cache_flags(tmp_path / "cache", {})
    assert flags.split() == [
        f"--tf_xla_persistent_cache_directory={(tmp_path / 'cache').resolve()}",
        flags.split()[1],
    ]
    prefix = flags.split()[1].partition("=")[2]
    assert prefix.startswith("zoo_")
    assert compile_mode.xla_cache_flags(tmp_path / "cache", {}) == flags
    # Other XLA flags compile other programs: another key. A user's own
    # TF_XLA_FLAGS are kept, in front.
    other = compile_mode.xla_cache_flags(tmp_path, {"XLA_FLAGS": "--xla_cpu_x=1"})
    assert other.split()[1] != flags.split()[1]
    own = compile_mode.xla_cache_flags(tmp_path, {"TF_XLA_FLAGS": "--tf_xla_a=1"})
    assert own.split()[0] == "--tf_xla_a=1"
    assert own.split()[2] not in (flags.split()[1], other.split()[1])


@pytest.mark.processes
def test_a_program_loaded_from_the_xla_cache_trains_the_same_numbers(tmp_path):
    # The tiny Dyck run compiled, three times: compiling into the cache and
    # loading from it, each in a process of its own (TensorFlow reads the
    # flags when it starts), and with no cache at all, here.
    cache = tmp_path / "cache"
    argv = [RECIPE_OF["dyck"], "--scale", "small", *TINY["dyck"]]
    argv += ["train.jit_compile=true", "--no-export"]
    environment = quiet_environment()
    environment.pop("TF_XLA_FLAGS", None)
    assert "persistent_cache" not in os.environ.get("TF_XLA_FLAGS", "")  # none here
    environment["TF_XLA_FLAGS"] = compile_mode.xla_cache_flags(cache, environment)
    for name in ("compiled", "loaded"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "training.train",
                *argv,
                "--run-dir",
                tmp_path / name,
            ],
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        if name == "compiled":
            programs = sorted(path.name for path in cache.iterdir())
            assert programs and all(p.startswith("zoo_") for p in programs)
        if name == "loaded":  # nothing compiled again
            assert sorted(path.name for path in cache.iterdir()) == programs
    assert train.main([*argv, "--run-dir", str(tmp_path / "uncached")]) == 0
    logs = {
        name: (tmp_path / name / "log.csv").read_text()
        for name in ("compiled", "loaded", "uncached")
    }
    assert logs["loaded"] == logs["compiled"] == logs["uncached"]
    metrics = [
        json.loads((tmp_path / name / "metrics.json").read_text())["test"]
        for name in ("compiled", "loaded", "uncached")
    ]
    assert metrics[0] == metrics[1] == metrics[2]
