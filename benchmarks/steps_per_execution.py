"""Training steps per call of Keras's train function: epochs timed in one process.

    python benchmarks/steps_per_execution.py [RECIPE] [--counts 1 32]
        [--modes xla graph] [--rounds 6] [--steps 500] [section.key=value ...]
    python benchmarks/steps_per_execution.py RECIPE --whole-run DIR
        [section.key=value ...]

For each mode (`xla`: `jit_compile=True`, `graph`: False) and each count
(`model.compile`'s `steps_per_execution`), one model of RECIPE at paper scale
(default `dyck2_lstm`) is compiled with the callbacks a run has (backup,
checkpoint, logs, early stopping, TerminateOnNaN, the epoch shuffle; no
validation), all from the same weights. After one warm-up fit each, every
round fits each model for `--steps` steps of the recipe's training data, in
turn (reversed every other round, so the load falls on all of them), and
prints each one's ms/step with the load average; the medians come last. The
models train on, so later rounds time later weights: the step is the same
work whatever the weights.

With `--whole-run DIR` it trains RECIPE at paper scale into DIR as
`python -m training.train` does (`training.runs.runs.train_run`, Keras's one
line per epoch) and also prints each epoch's seconds and ms/step to two
decimals with the load average, then the run's XLA and steps-per-call
choices.
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

import keras
import numpy as np

from training.core import fitting
from training.runs import runs
from training.tasks import make_task, recipes


class EpochTimer(keras.callbacks.Callback):
    """Prints each epoch's seconds and ms/step (validation included)."""

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self.start
        per_step = 1000 * seconds / self.params["steps"]
        print(
            f"epoch {epoch + 1}: {seconds:.2f} s, {per_step:.2f} ms/step "
            f"(load {os.getloadavg()[0]:.2f})",
            flush=True,
        )


def whole_run(recipe, run_dir):
    metrics = runs.train_run(recipe, run_dir, verbose=2, callbacks=[EpochTimer()])
    for key in runs.EXECUTION:
        print(f"{key}: {metrics[key]['used']} ({metrics[key]['reason']})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", nargs="?", default="dyck2_lstm")
    parser.add_argument("overrides", nargs="*", metavar="section.key=value")
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--modes", nargs="+", default=["xla", "graph"])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--whole-run", metavar="DIR")
    args = parser.parse_intermixed_args()
    recipe = recipes.resolve(args.recipe, "paper", args.overrides)
    if args.whole_run:
        return whole_run(recipe, args.whole_run)
    keras.utils.set_random_seed(recipe.train.seed)
    task = make_task(recipe)
    data, data_callbacks = task.train_data()
    steps_per_epoch = int(data.cardinality())
    weights = None
    models = {}
    for mode in args.modes:
        for count in args.counts:
            model = task.build_model()
            weights = weights or model.get_weights()
            model.set_weights(weights)
            model.compile(
                optimizer=fitting.make_optimizer(recipe.train, steps_per_epoch),
                **task.compile_arguments(),
                jit_compile=mode == "xla",
                steps_per_execution=count,
            )
            folder = Path(tempfile.mkdtemp(prefix="spe-"))
            callbacks = [
                *runs.run_directory_callbacks(folder, "loss"),
                *data_callbacks,
                *fitting.schedule_callbacks(recipe.train, "loss"),
            ]
            models[f"{mode} x{count}"] = (model, callbacks)
    print(
        f"{args.recipe} at paper scale, train shape {task.train_shape()}, "
        f"{args.steps} steps a fit, load average {os.getloadavg()[0]:.2f}"
    )

    def fit(name):
        model, callbacks = models[name]
        start = time.perf_counter()
        model.fit(data.take(args.steps), callbacks=callbacks, verbose=0, shuffle=False)
        return 1000 * (time.perf_counter() - start) / args.steps

    for name in models:
        fit(name)  # compiles
    times = {name: [] for name in models}
    for round_ in range(args.rounds):
        order = list(models) if round_ % 2 == 0 else list(models)[::-1]
        for name in order:
            times[name].append(fit(name))
        cells = "  ".join(f"{name} {times[name][-1]:6.2f}" for name in models)
        print(f"round {round_}: {cells} ms/step (load {os.getloadavg()[0]:.2f})")
    print("median: " + "  ".join(f"{n} {np.median(t):.2f}" for n, t in times.items()))


if __name__ == "__main__":
    main()
