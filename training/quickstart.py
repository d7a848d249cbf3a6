"""Trains a small mLSTM language model on generated data and prints its loss.

    python -m training.quickstart [--cell mlstm] [--epochs 8]

The data are sequences from a seeded random Markov chain, so the best
possible loss (the chain's entropy rate) is known and printed beside the
model's. It needs no data files and runs in about a minute on 2 CPU cores.
"""

import argparse
import sys

import keras
import numpy as np

import zoo

VOCAB, LENGTH, SEQUENCES = 16, 64, 512


def markov_chain_data(seed=0):
    """Returns token ids `(SEQUENCES, LENGTH + 1)` and the chain's entropy rate."""
    rng = np.random.default_rng(seed)
    # Each symbol has three likely successors: a peaked transition matrix.
    logits = rng.normal(size=(VOCAB, VOCAB))
    for row in logits:
        row[rng.choice(VOCAB, 3, replace=False)] += 4.0
    transition = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    ids = np.empty((SEQUENCES, LENGTH + 1), "int32")
    ids[:, 0] = rng.integers(0, VOCAB, SEQUENCES)
    cumulative = transition.cumsum(axis=1)
    for t in range(1, LENGTH + 1):
        u = rng.random(SEQUENCES)[:, None]
        ids[:, t] = np.minimum((u > cumulative[ids[:, t - 1]]).sum(axis=1), VOCAB - 1)
    stationary = np.linalg.matrix_power(transition, 200)[0]
    entropy = -(stationary[:, None] * transition * np.log(transition)).sum()
    return ids, float(entropy)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", default="mlstm", choices=zoo.available_cells())
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    keras.utils.set_random_seed(args.seed)
    ids, entropy = markov_chain_data(args.seed)
    model = zoo.language_model(args.cell, VOCAB, units=64)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2, global_clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=zoo.default_jit_compile(),
    )
    print(
        f"{args.cell} language model, {model.count_params():,} parameters; "
        f"uniform loss {np.log(VOCAB):.3f}, best possible {entropy:.3f} nats/token"
    )
    history = model.fit(
        ids[:, :-1], ids[:, 1:], batch_size=32, epochs=args.epochs, verbose=2
    )
    losses = history.history["loss"]
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} (best possible {entropy:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
