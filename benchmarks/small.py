"""Every cell at 8 and 32 units on the papers' formal-language shapes: graph vs XLA.

    python benchmarks/small.py [--cells lstm diffstk_rnn ...] [--units 8 32]
        [--steps 10]

The formal-language tables train tiny models on short strings, where a
training step costs TensorFlow's per-step dispatch, not arithmetic. For every
registered cell, at each `--units`, on two shapes taken from the recipes at
paper scale (their batch size and padded training length, generated here):

- `dyck`: `dyck2_lstm`'s next-token language model on Dyck-(2, 4);
- `d2`: `recognition_d2_diffstk_rnn`'s recognizer with the hybrid loss on D2,

the model is compiled with `jit_compile=False` and `True` in one process and
trained with `train_on_batch` on that recipe's real batches; after a warm-up
step each, `--steps` steps are timed alternately (one of each in turn, so load
falls on both) and the medians printed, with the epoch time they imply (median
step x the recipe's steps per epoch; validation and callbacks not included)
and the ratio graph/XLA (above 1: XLA is faster). The last column is what
`train.jit_compile = "auto"` picks for that shape.

With `KERAS_BACKEND=jax` the same steps are timed on Keras's JAX backend,
which compiles every step with XLA: one column, the JAX column of the table
in benchmarks/README.md (the data still come from tf.data, as in training).
"""

import argparse
import time

import keras
import numpy as np

import zoo
from training import compile_mode, recipes
from training.tasks import make_task

SHAPES = {"dyck": "dyck2_lstm", "d2": "recognition_d2_diffstk_rnn"}


def shape_task(name):
    """The paper-scale task of a shape's recipe, its data generated."""
    return make_task(recipes.resolve(SHAPES[name], "paper"))


def batches(task, count):
    """`count` real training batches of the task as (x, y, sample_weight)."""
    data, _ = task.train_data()
    data = data.take(count)
    if keras.backend.backend() != "tensorflow":  # NumPy, as Keras's adapter gives
        data = data.as_numpy_iterator()
    return [tuple(b) + (None,) * (3 - len(b)) for b in data]


def reads_ids(cell):
    """Whether the cell reads token ids itself (no embedding), as tensor_rnn.

    The class attribute the model builders check (`zoo.models`).
    """
    return getattr(zoo.get_cell_class(cell), "takes_token_ids", False)


def make_model(task, cell, units, jit_compile):
    keras.utils.set_random_seed(0)
    recipe = {
        **task.recipe,
        "model": {
            **task.recipe["model"],
            "cell": cell,
            "units": units,
            # Cells that read token ids (tensor_rnn) have no embedding.
            "embedding_dim": None if reads_ids(cell) else units,
            "options": {},
        },
    }
    model = task.with_recipe(recipe).build_model()
    model.compile(optimizer="adam", **task.compile_arguments(), jit_compile=jit_compile)
    return model


def step_seconds(model, batch):
    x, y, weights = batch
    start = time.perf_counter()
    model.train_on_batch(x, y, sample_weight=weights)
    return time.perf_counter() - start


def compare(task, cell, units, data, settings):
    """Median seconds per step for each `jit_compile` in `settings`."""
    models = [make_model(task, cell, units, jit) for jit in settings]
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
    args = parser.parse_args()
    cells = args.cells or [c for c in zoo.available_cells() if c != "dyck_rnn"]
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        settings, version = (False, True), f"TF {tf.__version__}"
        header = f"{'graph ms':>10}{'XLA ms':>9}{'graph s/ep':>11}{'XLA s/ep':>10}"
        header += f"{'graph/XLA':>10}  auto"
    else:  # JAX compiles every step; `jit_compile=True` is what fit uses there
        settings, version = (True,), f"Keras {keras.__version__} on {backend}"
        header = f"{backend + ' ms':>10}{backend + ' s/ep':>11}"
    print(f"{args.steps} timed steps, {compile_mode.cpu_name()}, {version}")
    print(f"{'shape':<6}{'cell':<18}{'units':>6}{header}")
    for shape in SHAPES:
        task = shape_task(shape)
        data = batches(task, args.steps + 1)
        per_epoch, _ = task.train_data()
        steps = int(per_epoch.cardinality())
        batch, length = task.train_shape()
        print(
            f"# {shape}: {SHAPES[shape]}, batch {batch}, length {length}, "
            f"{steps} steps per epoch"
        )
        for cell in cells:
            for units in args.units:
                try:
                    times = compare(task, cell, units, data, settings)
                except (ValueError, TypeError) as error:
                    print(f"{shape:<6}{cell:<18}{units:>6}  skipped: {error}")
                    continue
                row = f"{shape:<6}{cell:<18}{units:>6}"
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
