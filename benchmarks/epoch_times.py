"""Wall and CPU seconds of each training epoch of a recipe, and of the process.

    PYTHONPATH=. python benchmarks/epoch_times.py RECIPE SCALE [override ...]

Trains the recipe with `training.runs.runs.train_run` (as `python -m
training.train` does, without the export) in a temporary run directory and
prints each epoch's wall and CPU (`time.process_time`) seconds, measured by
a callback from the epoch's start to its end, with its loss, then the
process's CPU seconds (start-up, data, evaluation included). The first
epoch includes tracing and XLA's compile. Written to compare two checkouts
of the project on one recipe (`PYTHONPATH=` each checkout).
"""

import sys
import tempfile
import time
from pathlib import Path

import keras

from training.runs import runs
from training.tasks import recipes


class EpochClock(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epochs = []  # (wall seconds, CPU seconds, loss)

    def on_epoch_begin(self, epoch, logs=None):
        self.start = (time.perf_counter(), time.process_time())

    def on_epoch_end(self, epoch, logs=None):
        wall, cpu = self.start
        self.epochs.append(
            (time.perf_counter() - wall, time.process_time() - cpu, logs["loss"])
        )


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    name, scale, *overrides = sys.argv[1:]
    recipe = recipes.resolve(name, scale, overrides)
    clock = EpochClock()
    with tempfile.TemporaryDirectory() as run_dir:
        runs.train_run(recipe, Path(run_dir) / "run", callbacks=[clock])
    for epoch, (wall, cpu, loss) in enumerate(clock.epochs, 1):
        print(f"epoch {epoch}: {wall:.1f} s wall, {cpu:.1f} s CPU, loss {loss:.6f}")
    print(f"process CPU {time.process_time():.1f} s")


if __name__ == "__main__":
    main()
