"""The check the LiteRT and ONNX tests share: a converted step against serve_step."""

import numpy as np
import tensorflow as tf


def worst_difference(loaded, run, steps=100):
    """The largest difference from `serve_step` of `run(token, state)` over
    `steps` random tokens at batch 1: every output and the new state, under
    `serve_step`'s names, relative where a value's size is above 1 (an
    LSTM's cell state can be).

    Each step starts from `serve_step`'s state, not `run`'s own: a trained
    512-unit state amplifies round-off about 2x a step, so two free-running
    loops part after 20 steps (1e-5 at step 4 for mlstm_ptb_char) while
    every step agrees.
    """
    state = {
        k: v.numpy() for k, v in loaded.serve_initial_state(tf.constant(1)).items()
    }
    vocab = loaded.serve_step(tf.constant([0]), **state)["log_probabilities"].shape[-1]
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(steps):
        token = rng.integers(0, vocab, size=1).astype(np.int32)
        expected = loaded.serve_step(tf.constant(token), **state)
        got = run(token, state)
        for name, value in expected.items():
            want = value.numpy()
            difference = np.abs(got[name] - want) / np.maximum(np.abs(want), 1.0)
            worst = max(worst, float(difference.max()))
        state = {k: expected[k].numpy() for k in state}
    return worst
