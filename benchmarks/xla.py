"""TF graph against TF + XLA for one training step, over units and lengths.

    python benchmarks/xla.py [--cells lstm diffstk_rnn] [--units 8 32 128 256 1024]
        [--lengths 16 64 256 1024 2048] [--batch 32] [--steps 3]
        [--max-seconds 20]

The table behind `train.jit_compile = "auto"` (`training.compile_mode`): for
each cell, units and length, a `zoo.language_model` (vocabulary 50,
embedding `min(units, 32)`) is compiled twice in one process, with
`jit_compile=False` and `True`, and trained with `train_on_batch` on random
ids; after one warm-up step each, `--steps` steps are timed alternately (one
of each in turn, so load on the machine falls on both) and the medians
printed with their ratio (graph time over XLA time: above 1, XLA is faster)
and the rule's choice. A configuration whose graph step (measured on the
warm-up) takes more than `--max-seconds` is timed once. Run on an otherwise
idle machine; TensorFlow backend only (JAX always compiles).
"""

import argparse
import time

import keras
import numpy as np
import tensorflow as tf

import zoo
from training import compile_mode

VOCABULARY = 50


def make_model(cell, units, jit_compile):
    keras.utils.set_random_seed(0)
    model = zoo.language_model(cell, VOCABULARY, units, embedding_dim=min(units, 32))
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
    )
    return model


def timed_step(model, x, y):
    start = time.perf_counter()
    model.train_on_batch(x, y)
    return time.perf_counter() - start


def compare(cell, units, length, batch, steps, max_seconds):
    """Median graph and XLA step seconds for one configuration."""
    rng = np.random.default_rng(0)
    x = rng.integers(1, VOCABULARY, (batch, length)).astype("int32")
    y = rng.integers(1, VOCABULARY, (batch, length)).astype("int32")
    models = [make_model(cell, units, jit) for jit in (False, True)]
    for model in models:
        timed_step(model, x, y)  # traces and compiles
    first = [timed_step(model, x, y) for model in models]
    if first[0] > max_seconds:
        return first
    seconds = [[first[0]], [first[1]]]
    for _ in range(steps - 1):
        for index, model in enumerate(models):
            seconds[index].append(timed_step(model, x, y))
    return [float(np.median(s)) for s in seconds]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", default=["lstm", "diffstk_rnn"])
    parser.add_argument("--units", type=int, nargs="+", default=[8, 32, 128, 256, 1024])
    parser.add_argument(
        "--lengths", type=int, nargs="+", default=[16, 64, 256, 1024, 2048]
    )
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=20.0)
    args = parser.parse_args()
    cpu = compile_mode.cpu_name()
    print(f"batch {args.batch}, {args.steps} timed steps, {cpu}, TF {tf.__version__}")
    print(
        f"{'cell':<14}{'units':>6}{'length':>7}{'graph ms':>10}{'XLA ms':>9}"
        f"{'graph/XLA':>10}  rule"
    )
    for cell in args.cells:
        for units in args.units:
            for length in args.lengths:
                graph, xla = compare(
                    cell, units, length, args.batch, args.steps, args.max_seconds
                )
                rule = compile_mode.choose("auto", units, args.batch, length).used
                print(
                    f"{cell:<14}{units:>6}{length:>7}{graph * 1e3:>10.1f}"
                    f"{xla * 1e3:>9.1f}{graph / xla:>10.2f}  "
                    f"{'XLA' if rule else 'graph'}",
                    flush=True,
                )
                keras.backend.clear_session()


if __name__ == "__main__":
    main()
