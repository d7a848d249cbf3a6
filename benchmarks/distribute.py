"""Two replicas against one device: `model.fit` throughput and loss.

Trains the same seeded LSTM language model on the same random token batches
once on one device and once under `tf.distribute.MirroredStrategy` over two
logical devices (two logical CPU devices when there is no GPU), each in a
process of its own (logical devices must be set before TensorFlow starts),
and prints tokens/s over the timed steps and the final training loss.

    PYTHONPATH=. python benchmarks/distribute.py [--steps 20] [--units 128]
"""

import argparse
import json
import os
import subprocess
import sys
import time

VOCAB, BATCH, LENGTH, WARMUP = 50, 32, 64, 3


def measure(devices, steps, units):
    import keras
    import numpy as np
    import tensorflow as tf

    if devices > 1:
        (cpu,) = tf.config.list_physical_devices("CPU")
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * devices
        )
        names = [d.name for d in tf.config.list_logical_devices("CPU")]
        strategy = tf.distribute.MirroredStrategy(names)
    else:
        strategy = tf.distribute.get_strategy()
    keras.utils.set_random_seed(0)
    ids = np.random.default_rng(0).integers(
        0, VOCAB, size=((WARMUP + steps) * BATCH, LENGTH + 1)
    )
    data = tf.data.Dataset.from_tensor_slices((ids[:, :-1], ids[:, 1:])).batch(BATCH)
    with strategy.scope():
        model = keras.Sequential(
            [
                keras.layers.Embedding(VOCAB, units),
                keras.layers.LSTM(units, return_sequences=True),
                keras.layers.Dense(VOCAB),
            ]
        )
        model.compile(
            optimizer=keras.optimizers.Adam(1e-3),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    model.fit(data.take(WARMUP), verbose=0)
    start = time.perf_counter()
    history = model.fit(data.skip(WARMUP), verbose=0)
    seconds = time.perf_counter() - start
    return {
        "replicas": strategy.num_replicas_in_sync,
        "tokens_per_second": steps * BATCH * LENGTH / seconds,
        "loss": history.history["loss"][-1],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--devices", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.devices is not None:  # the child process
        print(json.dumps(measure(args.devices, args.steps, args.units)))
        return
    print(f"LSTM language model, units {args.units}, global batch {BATCH}, ")
    print(f"length {LENGTH}, {args.steps} timed steps after {WARMUP} warm-up steps")
    results = []
    for devices in (1, 2):
        done = subprocess.run(
            [sys.executable, __file__, "--devices", str(devices)]
            + ["--steps", str(args.steps), "--units", str(args.units)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        )
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    for result in results:
        print(
            f"{result['replicas']} replica(s): {result['tokens_per_second']:,.0f} "
            f"tokens/s, final loss {result['loss']:.6f}"
        )
    one, two = results
    speedup = two["tokens_per_second"] / one["tokens_per_second"]
    difference = abs(two["loss"] - one["loss"])
    print(f"speed-up {speedup:.2f}x, loss difference {difference:.2e}")


if __name__ == "__main__":
    main()
