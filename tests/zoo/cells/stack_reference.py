"""NumPy helpers shared by the stack cells' tests (StackRNN and DiffStk)."""

import keras
import numpy as np

UNITS, DEPTH, WIDTH = 6, 8, 2
EMPTY = -1.0


def run_layer(cell, x, **kwargs):
    layer = keras.layers.RNN(cell, return_sequences=True)
    return np.asarray(layer(x.astype("float32"), **kwargs))


def numpy_weights(layer):
    return {w.name: np.asarray(w.numpy(), "float64") for w in layer.weights}


def numpy_stack_step(stack, actions, pushed):
    """Eqs. 7-8 depth by depth, NO-OP kept at every depth; stack [b, depth, w]."""
    push, pop = actions[:, 0, None], actions[:, 1, None]
    noop = actions[:, 2, None] if actions.shape[1] == 3 else 0.0
    below = np.concatenate([stack, np.full_like(stack[:, :1], EMPTY)], axis=1)
    new = np.empty_like(stack)
    new[:, 0] = push * pushed + pop * stack[:, 1] + noop * stack[:, 0]
    for i in range(1, stack.shape[1]):
        new[:, i] = push * stack[:, i - 1] + pop * below[:, i + 1] + noop * stack[:, i]
    return new
