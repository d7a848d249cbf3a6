"""Where a small model's `fit` step goes on TensorFlow: per step or per epoch.

The recogniser LSTM of `peers.py` (batch 32, length 55, Adam 2e-3 clipped
at 15), trained with `model.fit` on NumPy arrays, XLA and 32 steps a call
(the zoo's default), one thread (`peers.ONE_THREAD`). For each `--batches`
count it prints the CPU ms a step of `fit` (best of epochs 2-4); then the
compiled group of 32 steps alone, called on batches stacked beforehand;
taking 32 batches from a `tf.data` iterator and stacking them, as
`zoo.tensorflow_steps` does each call; and making one iterator of Keras's
array adapter's dataset, which Keras 3.15's TensorFlow trainer does twice
an epoch (benchmarks/log.md, "What is left at 8-32 units"). With
`KERAS_BACKEND=jax` only the `fit` lines are printed.

    PYTHONPATH=.:benchmarks python benchmarks/epoch_costs.py --units 8 --batches 64 256
"""

import argparse
import itertools
import os
import time

import peers  # noqa: E402  (imports no framework)

for name, value in {**peers.ONE_THREAD, "TF_CPP_MIN_LOG_LEVEL": "3"}.items():
    os.environ.setdefault(name, value)  # before a framework starts
import keras  # noqa: E402

import zoo  # noqa: E402

STEPS = 32


def cpu_ms(function, repeats, per):
    """CPU ms of one of `per` units of `function()`, best of `repeats` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return 1e3 * best / per


def fit_step(units, batches):
    ids, _, labels = peers.data("recognizer", batches)
    model = zoo.recognizer("lstm", 6, units, embedding_dim=8)
    model.compile(
        keras.optimizers.Adam(2e-3, clipvalue=15.0),
        **zoo.hybrid_recognition_loss(),
        jit_compile=True,
        steps_per_execution=STEPS,
    )
    targets = zoo.recognition_targets(ids, labels)
    times = []
    clock = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda *_: times.append(time.process_time()),
        on_epoch_end=lambda *_: times.append(time.process_time() - times.pop()),
    )
    model.fit(
        ids,
        targets,
        batch_size=32,
        epochs=4,
        shuffle=False,
        verbose=0,
        callbacks=[clock],
    )
    return model, ids, targets, 1e3 * min(times[1:]) / batches


def parts(model, ids, targets):
    import tensorflow as tf
    from keras import tree
    from keras.src.trainers.data_adapters import array_data_adapter

    dataset = tf.data.Dataset.from_tensor_slices((ids, targets)).batch(32)
    batches = list(dataset.take(STEPS))
    stacked = tree.map_structure(lambda *leaves: tf.stack(leaves), *batches)
    group = model.train_function.group

    def run_group():
        for _ in range(4):
            float(group(stacked)["loss"])

    endless = iter(dataset.repeat())

    def take_and_stack():
        for _ in range(4):
            taken = list(itertools.islice(endless, STEPS))
            tree.map_structure(lambda *leaves: tf.stack(leaves), *taken)

    adapter = array_data_adapter.ArrayDataAdapter(ids, targets, batch_size=32)
    keras_dataset = adapter.get_tf_dataset()

    def make_iterator():
        next(iter(keras_dataset))

    print(f"  compiled group alone: {cpu_ms(run_group, 3, 4 * STEPS):.3f} ms a step")
    print(f"  take and stack: {cpu_ms(take_and_stack, 3, 4 * STEPS):.3f} ms a step")
    print(f"  one Keras iterator: {cpu_ms(make_iterator, 10, 1):.2f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 256])
    args = parser.parse_args()
    backend = keras.backend.backend()
    print(f"{backend}, recogniser LSTM, {args.units} units, load {os.getloadavg()}")
    for batches in args.batches:
        model, ids, targets, step = fit_step(args.units, batches)
        print(f"fit, {batches} batches an epoch: {step:.3f} ms a step")
        if backend == "tensorflow":
            parts(model, ids, targets)


if __name__ == "__main__":
    main()
