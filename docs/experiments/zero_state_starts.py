"""How often a language model's zero state runs away where a read starts.

    ZOO_DATA_DIR=../shared/data PYTHONPATH=. python \
        docs/experiments/zero_state_starts.py [RUN_DIR_OR_PRESET ...]

For each language model (default: every built-in language-model preset; or
the run directories and `preset:NAME`s given): 256 reads of 400 tokens of
the validation split, each starting from the zero state at a position drawn
with NumPy's generator seeded 0. A read whose mean loss after its first 100
tokens is more than 2 nats above the median read's has run away: a stateful
model that only ever started from zero at an epoch's row starts can meet a
start from which its cell state grows without bound (docs/training.md,
"fit's val_loss against training.evaluate"). Prints the median, the count
of reads that ran away and the worst read's loss, in nats a token.
"""

import sys

import keras
import numpy as np

import zoo
from training.runs import runs

READS, LENGTH, SKIP, MARGIN = 256, 400, 100, 2.0


def language_model_presets():
    return [
        f"preset:{name}"
        for name in zoo.presets.available()
        if zoo.presets.PresetLoader(name).config()["task"]["kind"] == "language_model"
    ]


def read_losses(where):
    """The mean loss (nats) after `SKIP` tokens of each of `READS` reads."""
    run = runs.load_run(where)
    ids = np.asarray(run.task.encoded["valid"].ids, "int32")
    starts = np.random.default_rng(0).integers(0, len(ids) - LENGTH - 1, READS)
    inputs = np.stack([ids[s : s + LENGTH] for s in starts])
    targets = np.stack([ids[s + 1 : s + LENGTH + 1] for s in starts])
    logits = run.model.predict(inputs, batch_size=64, verbose=0)
    losses = keras.losses.sparse_categorical_crossentropy(
        targets, logits, from_logits=True
    )
    return np.asarray(losses)[:, SKIP:].mean(axis=1)


if __name__ == "__main__":
    for where in sys.argv[1:] or language_model_presets():
        losses = read_losses(where)
        median = float(np.median(losses))
        away = int((losses > median + MARGIN).sum())
        print(
            f"{where}: median {median:.3f}, ran away {away} of {READS}, "
            f"worst {losses.max():.2f} nats a token"
        )
