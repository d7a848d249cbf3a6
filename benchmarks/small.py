"""Every cell at 8 and 32 units on the papers' formal-language shapes: graph vs XLA.

    python benchmarks/small.py [--cells lstm diffstk_rnn ...] [--units 8 32]
        [--steps 10]

The formal-language tables train tiny models on short strings, where a
training step costs TensorFlow's per-step dispatch, not arithmetic. For every
registered cell, at each `--units`, on two shapes taken from the recipes at
paper scale (their batch size and padded training length, generated here):

- `dyck`: `dyck2_lstm`'s next-token language model on Dyck-(2, 4);
- `d2`: `recognition_d2_diffstk_rnn_paper`'s recognizer with the hybrid loss on D2,

the model is compiled with `jit_compile=False` and `True` in one process and
trained with `train_on_batch` on that recipe's real batches; after a warm-up
step each, `--steps` steps are timed alternately (one of each in turn, so load
falls on both) and the medians printed, with the epoch time they imply (median
step x the recipe's steps per epoch; validation and callbacks not included)
and the ratio graph/XLA (above 1: XLA is faster). The last column is what
`train.jit_compile = "auto"` picks for that shape.

With `KERAS_BACKEND=jax` the same steps are timed on Keras's JAX backend,
which compiles every step with XLA: one column, the JAX column of the table
in benchmarks/log.md (the data still come from tf.data, as in training).

On a machine without TensorFlow (the lent GPU machine: JAX, no TensorFlow,
no network), `--save-shapes DIR` here writes each shape's batches, its
compile arguments and every model before its first step (`.keras`), and
`--shapes DIR` there times those same models on those same batches with no
`training.tasks` (tf.data) at all:

    python benchmarks/small.py --save-shapes .gpu/small --units 8 32
    KERAS_BACKEND=jax python benchmarks/small.py --shapes .gpu/small --units 8 32
"""

import argparse
import pickle
import time
from pathlib import Path

import keras
import numpy as np

import zoo
from training.core import compile_mode
from training.tasks import recipes
from zoo.devices import gpu_visible

SHAPES = {"dyck": "dyck2_lstm", "d2": "recognition_d2_diffstk_rnn_paper"}
SHAPE_FILE = "{}.pkl"
MODEL_FILE = "{}-{}-{}.keras"


def shape_task(name):
    """The paper-scale task of a shape's recipe, its data generated."""
    from training.tasks import make_task  # tf.data: not with --shapes

    return make_task(recipes.resolve(SHAPES[name], "paper"))


def batches(task, count):
    """`count` real training batches of the task as (x, y, sample_weight)."""
    data, _ = task.train_data()
    data = data.take(count)
    if keras.backend.backend() != "tensorflow":  # NumPy, as Keras's adapter gives
        data = data.as_numpy_iterator()
    return [tuple(b) + (None,) * (3 - len(b)) for b in data]


class TaskShape:
    """A shape made here from its recipe's task (needs TensorFlow)."""

    def __init__(self, name, count):
        self.name = name
        self.task = shape_task(name)
        self.data = batches(self.task, count)
        per_epoch, _ = self.task.train_data()
        self.steps = int(per_epoch.cardinality())
        self.batch, self.length = self.task.train_shape()

    def model(self, cell, units):
        """The shape's model for `cell` at `units`, seeded, not compiled."""
        keras.utils.set_random_seed(0)
        task = self.task
        recipe = task.recipe.with_values(
            {
                "model.cell": cell,
                "model.units": units,
                # Cells that read token ids (tensor_rnn) have no embedding.
                "model.embedding_dim": None if reads_ids(cell) else units,
                "model.options": {},
            }
        )
        return task.with_recipe(recipe).build_model()

    def compile_arguments(self):
        return self.task.compile_arguments()

    def save(self, folder, cells, units):
        """Writes the batches, compile arguments and models for `--shapes`."""
        numpy_data = [
            tuple(keras.tree.map_structure(np.asarray, part) for part in batch)
            for batch in self.data
        ]
        state = {
            "data": numpy_data,
            "steps": self.steps,
            "batch": self.batch,
            "length": self.length,
            "compile_arguments": self.compile_arguments(),
        }
        with open(folder / SHAPE_FILE.format(self.name), "wb") as file:
            pickle.dump(state, file)
        for cell in cells:
            for size in units:
                try:
                    model = self.model(cell, size)
                except (ValueError, TypeError):
                    continue  # reported as skipped where it is timed
                model.save(folder / MODEL_FILE.format(self.name, cell, size))


class SavedShape:
    """A shape read from `--save-shapes`'s folder: no TensorFlow needed."""

    def __init__(self, name, folder):
        self.name, self.folder = name, Path(folder)
        path = self.folder / SHAPE_FILE.format(name)
        if not path.is_file():
            raise SystemExit(
                f"--shapes {folder}: no {path.name}; expected a folder written "
                "by --save-shapes"
            )
        with open(path, "rb") as file:
            state = pickle.load(file)
        self.data = state["data"]
        self.steps, self.batch, self.length = (
            state["steps"],
            state["batch"],
            state["length"],
        )
        self._compile_arguments = state["compile_arguments"]

    def model(self, cell, units):
        path = self.folder / MODEL_FILE.format(self.name, cell, units)
        if not path.is_file():
            raise ValueError(f"no saved model {path.name}")
        return keras.saving.load_model(path, compile=False)

    def compile_arguments(self):
        return self._compile_arguments


def reads_ids(cell):
    """Whether the cell reads token ids itself (no embedding), as tensor_rnn.

    The class attribute the model builders check (`zoo.models`).
    """
    return getattr(zoo.get_cell_class(cell), "takes_token_ids", False)


def make_model(shape, cell, units, jit_compile):
    model = shape.model(cell, units)
    model.compile(
        optimizer="adam", **shape.compile_arguments(), jit_compile=jit_compile
    )
    return model


def step_seconds(model, batch):
    x, y, weights = batch
    start = time.perf_counter()
    model.train_on_batch(x, y, sample_weight=weights)
    return time.perf_counter() - start


def compare(shape, cell, units, data, settings):
    """Median seconds per step for each `jit_compile` in `settings`."""
    models = [make_model(shape, cell, units, jit) for jit in settings]
    for model in models:
        step_seconds(model, data[0])  # traces and compiles
    seconds = [[] for _ in models]
    for batch in data[1:]:
        for index, model in enumerate(models):
            seconds[index].append(step_seconds(model, batch))
    return [float(np.median(s)) for s in seconds]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", default=None)
    parser.add_argument("--units", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument(
        "--save-shapes",
        metavar="DIR",
        help="write the shapes' batches and models to DIR and stop",
    )
    parser.add_argument(
        "--shapes",
        metavar="DIR",
        help="time the shapes --save-shapes wrote to DIR (no TensorFlow needed)",
    )
    args = parser.parse_args()
    cells = args.cells or [c for c in zoo.available_cells() if c != "dyck_rnn"]
    if args.save_shapes:
        folder = Path(args.save_shapes)
        folder.mkdir(parents=True, exist_ok=True)
        for shape in SHAPES:
            TaskShape(shape, args.steps + 1).save(folder, cells, args.units)
        print(f"written: {folder}")
        return
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        settings, version = (False, True), f"TF {tf.__version__}"
        header = f"{'graph ms':>10}{'XLA ms':>9}{'graph s/ep':>11}{'XLA s/ep':>10}"
        header += f"{'graph/XLA':>10}  auto"
    else:  # JAX compiles every step; `jit_compile=True` is what fit uses there
        settings, version = (True,), f"Keras {keras.__version__} on {backend}"
        header = f"{backend + ' ms':>10}{backend + ' s/ep':>11}"
    device = "GPU" if gpu_visible() else compile_mode.cpu_name()
    print(f"{args.steps} timed steps, {device}, {version}")
    print(f"{'shape':<6}{'cell':<18}{'units':>6}{header}")
    for name in SHAPES:
        if args.shapes:
            shape = SavedShape(name, args.shapes)
        else:
            shape = TaskShape(name, args.steps + 1)
        data = shape.data[: args.steps + 1]
        steps, batch, length = shape.steps, shape.batch, shape.length
        print(
            f"# {name}: {SHAPES[name]}, batch {batch}, length {length}, "
            f"{steps} steps per epoch"
        )
        for cell in cells:
            for units in args.units:
                try:
                    times = compare(shape, cell, units, data, settings)
                except (ValueError, TypeError) as error:
                    print(f"{name:<6}{cell:<18}{units:>6}  skipped: {error}")
                    continue
                row = f"{name:<6}{cell:<18}{units:>6}"
                if len(times) == 1:
                    row += f"{times[0] * 1e3:>10.1f}{times[0] * steps:>11.1f}"
                else:
                    graph, xla = times
                    auto = compile_mode.choose("auto", units, batch, length).used
                    row += (
                        f"{graph * 1e3:>10.1f}{xla * 1e3:>9.1f}{graph * steps:>11.1f}"
                        f"{xla * steps:>10.1f}{graph / xla:>10.2f}  "
                        f"{'XLA' if auto else 'graph'}"
                    )
                print(row, flush=True)
                keras.backend.clear_session()


if __name__ == "__main__":
    main()
