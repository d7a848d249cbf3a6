"""One model by three doors: time per training step, builder against loaded.

    python benchmarks/model_doors.py [--rounds 5] [--steps 96] [--heads ...]

For each head (a language model, a recognizer on a stack cell, a tagger, a
classifier and the Dyck-RNN, small as the seed tables' models are), the
model is built by its builder, saved, then loaded by
`keras.saving.load_model` and by `Class.from_preset` (`save_to_preset`);
the three start from the same weights and are compiled alike (Adam,
`jit_compile` as `zoo.default_jit_compile` chooses for the shape,
`steps_per_execution=8`). After a warm-up fit each (the compile), every
round fits each model for `--steps` batches in turn (reversed every other
round), one thread. Printed: each round's ms/step with the load average,
then per head the median ms/step of each door and its ratio to the
builder's (issue 58: within 10%), and each door's compiled-step choice.
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

import keras
import numpy as np

import zoo
from zoo.tensorflow_steps import groups_steps

BATCH, LENGTH, VOCAB = 32, 56, 12
HEADS = {
    "language_model": (lambda: zoo.language_model("mlstm", VOCAB, 32), "lm"),
    "recognizer": (
        lambda: zoo.recognizer("diffstk_rnn", VOCAB, 8, stack_depth=16),
        "recognizer",
    ),
    "tagger": (lambda: zoo.tagger("lstm", VOCAB, 16, 4), "tagger"),
    "classifier": (lambda: zoo.classifier("gru", VOCAB, 16, 2), "classifier"),
    "dyck_rnn": (lambda: zoo.dyck_rnn_model(2, 8), "dyck"),
}


def data(kind, steps, rng):
    x = rng.integers(1, VOCAB, size=(steps * BATCH, LENGTH)).astype("int32")
    if kind == "lm":
        return (
            x,
            np.roll(x, -1, axis=1),
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    if kind == "recognizer":
        targets = zoo.recognition_targets(x, rng.integers(0, 2, size=len(x)))
        return x, targets, zoo.hybrid_recognition_loss()["loss"]
    if kind == "tagger":
        y = rng.integers(0, 4, size=x.shape)
        return x, y, keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if kind == "classifier":
        y = rng.integers(0, 2, size=len(x))
        return x, y, keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x = rng.integers(3, 7, size=x.shape).astype("int32")  # brackets of k = 2
    y = rng.integers(0, 2, size=x.shape)
    return x, y, keras.losses.SparseCategoricalCrossentropy()


def doors(build, folder):
    keras.utils.set_random_seed(0)
    built = build()
    folder.mkdir(parents=True)
    built.save(folder / "model.keras")
    loaded = keras.saving.load_model(folder / "model.keras", compile=False)
    preset = type(built).from_preset(built.save_to_preset(folder / "preset"))
    return {"builder": built, "load_model": loaded, "from_preset": preset}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=96)
    parser.add_argument("--heads", nargs="+", default=list(HEADS), choices=HEADS)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    folder = Path(tempfile.mkdtemp(prefix="doors-"))
    models, arrays = {}, {}
    for head in args.heads:
        build, kind = HEADS[head]
        x, y, loss = data(kind, args.steps, rng)
        arrays[head] = (x, y)
        three = doors(build, folder / head)
        start = three["builder"].get_weights()
        units = zoo.model_parts(three["builder"]).recurrent[0].cell.units
        jit = zoo.default_jit_compile(units, BATCH, LENGTH)
        for door, model in three.items():
            model.set_weights(start)
            model.compile("adam", loss, jit_compile=jit, steps_per_execution=8)
            models[head, door] = model
    print(
        f"batch {BATCH}, length {LENGTH}, {args.steps} steps a fit, "
        f"{keras.backend.backend()}, load average {os.getloadavg()[0]:.2f}"
    )

    def fit(key):
        x, y = arrays[key[0]]
        start = time.perf_counter()
        models[key].fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
        return 1000 * (time.perf_counter() - start) / args.steps

    for key in models:
        fit(key)  # compiles
    times = {key: [] for key in models}
    for round_ in range(args.rounds):
        order = list(models) if round_ % 2 == 0 else list(models)[::-1]
        for key in order:
            times[key].append(fit(key))
        cells = "  ".join(f"{h}/{d} {times[h, d][-1]:.2f}" for h, d in models)
        print(f"round {round_}: {cells} ms/step (load {os.getloadavg()[0]:.2f})")
    print("head            door         ms/step  ratio  jit   grouped")
    for head, door in models:
        median = np.median(times[head, door])
        ratio = median / np.median(times[head, "builder"])
        model = models[head, door]
        print(
            f"{head:15s} {door:12s} {median:7.2f}  {ratio:5.2f}  "
            f"{model.jit_compile!s:5s} {groups_steps(model)}"
        )


if __name__ == "__main__":
    main()
