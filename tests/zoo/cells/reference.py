"""NumPy helpers for the cells' reference tests."""

import keras
import numpy as np

from tests.zoo.cells.cell_contract import BATCH, FEATURES, TIME


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def random_inputs(seed=1):
    return np.random.default_rng(seed).normal(size=(BATCH, TIME, FEATURES))


def run_layer(cell, x):
    return np.asarray(keras.layers.RNN(cell, return_sequences=True)(x))
