"""TF graph against TF + XLA for `model.fit` training, over units and lengths.

    python benchmarks/xla.py [--cells lstm diffstk_rnn]
        [--units 8 32 128 256 512 1024] [--lengths 16 64 256 1024 2048]
        [--batch 32] [--repeats 2] [--max-seconds 3] [--max-step 4]
        [--threads 1]

The table behind `train.jit_compile = "auto"` (`training.core.compile_mode`): for
each cell, units and length, a `zoo.language_model` (vocabulary 50,
embedding `min(units, 32)`) is compiled twice in one process, as
`training.train` would run it either way: `jit_compile=False` with one step
a call, and `jit_compile=True` with every step of an epoch in one call
(`steps_per_execution`, up to `training.core.compile_mode.AUTO_STEPS`; the zoo's
grouped XLA train function, `zoo.tensorflow_steps`). Each trains
`model.fit` epochs of N batches of random ids: one epoch to trace and
compile, then `--repeats` epochs each, alternately (so load on the machine
falls on both); a step's time is the best epoch's over N, in wall and in CPU
(`time.process_time`) seconds. N is 32, or fewer where one graph step
(timed once first) is long: as many as fit in `--max-seconds`, at least 2.
Where that graph step takes more than `--max-step` seconds the
configuration and the longer lengths at those units are skipped. Printed:
both step times, the ratio of CPU times (graph over XLA: above 1, XLA is
faster) and the rule's choice. One thread (`--threads`), as the tables'
runs; TensorFlow backend only (JAX always compiles).
"""

import argparse
import os
import time

THREADS_ENVIRONMENT = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
VOCABULARY = 50


def make_model(cell, units, jit_compile, steps):
    import keras

    import zoo

    keras.utils.set_random_seed(0)
    model = zoo.language_model(cell, VOCABULARY, units, embedding_dim=min(units, 32))
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
        steps_per_execution=steps,
    )
    return model


def timed_epoch(model, x, y, batch):
    """Wall and CPU seconds of one epoch of `model.fit`."""
    wall, cpu = time.perf_counter(), time.process_time()
    model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    return time.perf_counter() - wall, time.process_time() - cpu


def compare(cell, units, length, batch, repeats, max_seconds, max_step):
    """Per-step `(wall, cpu)` of the graph and of XLA, and N, or None (skipped)."""
    import numpy as np

    from training.core.compile_mode import AUTO_STEPS

    rng = np.random.default_rng(0)
    x = rng.integers(1, VOCABULARY, (AUTO_STEPS * batch, length)).astype("int32")
    y = rng.integers(1, VOCABULARY, (AUTO_STEPS * batch, length)).astype("int32")
    graph = make_model(cell, units, False, 1)
    graph.train_on_batch(x[:batch], y[:batch])  # traces
    start = time.perf_counter()
    graph.train_on_batch(x[:batch], y[:batch])
    one_step = time.perf_counter() - start
    if one_step > max_step:
        return None
    steps = int(min(AUTO_STEPS, max(2, max_seconds // one_step)))
    x, y = x[: steps * batch], y[: steps * batch]
    models = [graph, make_model(cell, units, True, steps)]
    for model in models:
        timed_epoch(model, x, y, batch)  # traces and compiles
    if models[1].jit_compile is not True:
        raise SystemExit("Keras refused jit_compile=True")
    seconds = [[], []]
    for _ in range(repeats):
        for index, model in enumerate(models):
            seconds[index].append(timed_epoch(model, x, y, batch))
    best = [np.min(np.array(s), axis=0) / steps for s in seconds]
    return best, steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", default=["lstm", "diffstk_rnn"])
    parser.add_argument(
        "--units", type=int, nargs="+", default=[8, 32, 128, 256, 512, 1024]
    )
    parser.add_argument(
        "--lengths", type=int, nargs="+", default=[16, 64, 256, 1024, 2048]
    )
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-seconds", type=float, default=3.0)
    parser.add_argument("--max-step", type=float, default=4.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    for name in THREADS_ENVIRONMENT:
        os.environ[name] = str(args.threads)
    if args.threads == 1:
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    import keras
    import tensorflow as tf

    from training.core import compile_mode

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    tf.get_logger().setLevel("ERROR")
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"batch {args.batch}, best of {args.repeats} epochs, {args.threads} "
        f"thread(s), {compile_mode.cpu_name()} "
        f"({' '.join(compile_mode.cpu_features())}), TF {tf.__version__}; "
        f"load average {load}"
    )
    print(
        f"{'cell':<12}{'units':>6}{'length':>7}{'N':>4}{'graph ms wall/CPU':>20}"
        f"{'XLA ms wall/CPU':>20}{'graph/XLA':>10}  rule"
    )
    for cell in args.cells:
        for units in args.units:
            for length in args.lengths:
                measured = compare(
                    cell,
                    units,
                    length,
                    args.batch,
                    args.repeats,
                    args.max_seconds,
                    args.max_step,
                )
                keras.backend.clear_session()
                if measured is None:
                    print(
                        f"{cell:<12}{units:>6}{length:>7}  one graph step over "
                        f"{args.max_step:g} s: this and longer lengths skipped",
                        flush=True,
                    )
                    break
                (graph, xla), steps = measured
                rule = compile_mode.choose("auto", units, args.batch, length).used
                print(
                    f"{cell:<12}{units:>6}{length:>7}{steps:>4}"
                    f"{f'{graph[0] * 1e3:.1f} / {graph[1] * 1e3:.1f}':>20}"
                    f"{f'{xla[0] * 1e3:.1f} / {xla[1] * 1e3:.1f}':>20}"
                    f"{graph[1] / xla[1]:>10.2f}  {'XLA' if rule else 'graph'}",
                    flush=True,
                )
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"load average {load} at the end")


if __name__ == "__main__":
    main()
