"""Runs a training job on one or two logical CPU devices, in a process of its own.

Logical devices must be configured before TensorFlow first uses a device, so
the distribution tests run `python -m tests.training.replicas DEVICES JOB ...`
in a subprocess and read the one JSON line it prints last:

- `cells`: every registered cell's tiny language model, one `model.fit` step
  under `MirroredStrategy`; prints `{cell: loss}`.
- `train RECIPE_JSON RUN_DIR`: `training.runs.runs.train_run`; prints the metrics
  and the last epoch's training loss (the tests call `train` in their own
  process for the run on one device).

One job a process: a second `MirroredStrategy` in a process reuses the
first one's collective instance keys ("Shape mismatch in the collective
instance 100").
"""

import csv
import json
import sys
from pathlib import Path

import tensorflow as tf


def configure(devices):
    """Splits the CPU into `devices` logical devices (before any TF op)."""
    (cpu,) = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * devices
    )


def every_cell():
    import keras
    import numpy as np

    import zoo

    strategy = tf.distribute.MirroredStrategy(
        [d.name for d in tf.config.list_logical_devices("CPU")]
    )
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 7, size=(4, 6)).astype("int32")  # 2 rows per replica
    losses = {"replicas": strategy.num_replicas_in_sync}
    for cell in zoo.available_cells():
        keras.utils.set_random_seed(0)
        with strategy.scope():
            model = zoo.language_model(cell, vocab_size=7, units=4)
            model.compile(
                optimizer=keras.optimizers.Adam(1e-2),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            )
        before = [w.numpy().copy() for w in model.trainable_weights]
        history = model.fit(ids[:, :-1], ids[:, 1:], batch_size=4, verbose=0)
        changed = any(
            not np.array_equal(b, w.numpy())
            for b, w in zip(before, model.trainable_weights, strict=True)
        )
        losses[cell] = history.history["loss"][0] if changed else None
    return losses


def train(recipe_json, run_dir):
    from training.core import fitting
    from training.runs import runs

    recipe = runs.read_recipe(Path(recipe_json))
    metrics = runs.train_run(recipe, run_dir)
    log = Path(run_dir) / runs.LOG
    rows = []
    if log.exists():
        with log.open() as file:
            rows = list(csv.DictReader(file))
    return {
        "metrics": metrics,
        "loss": float(rows[-1]["loss"]) if rows else None,
        "replicas": fitting.distribution_strategy(recipe.train).num_replicas_in_sync,
    }


def main(argv):
    devices, job, *args = argv
    if int(devices) > 1:
        configure(int(devices))
    result = every_cell() if job == "cells" else train(*args)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
