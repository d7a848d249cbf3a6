"""Reads an export's streaming endpoints with only TensorFlow imported.

    python tests/training/runs/streaming_probe.py EXPORT TEXT OUT_JSON IDS

Run by tests/training/runs/streaming_test.py in a fresh process: feeds
IDS (a JSON list: the ids `serve_text` reads for TEXT, its start id first)
one at a time through `serve_step` and writes the largest difference from
`serve_text`'s log-probabilities, and `serve_generate`'s texts, to
OUT_JSON.
"""

import json
import sys

import numpy as np
import tensorflow as tf


def main(export, text, out):
    loaded = tf.saved_model.load(export)
    scored = loaded.serve_text(tf.constant([text]))
    whole = scored["log_probabilities"][0].numpy()  # [time, vocab]
    state = loaded.serve_initial_state(tf.constant(1))
    tokens = json.loads(sys.argv[4])
    worst = 0.0
    for position, token in enumerate(tokens):
        state = loaded.serve_step(tf.constant([token], tf.int32), **state_of(state))
        worst = max(
            worst, float(np.abs(state["log_probabilities"][0] - whole[position]).max())
        )
    arguments = [tf.constant([text, text[:2]]), tf.constant(12), tf.constant(1.0)]
    arguments += [tf.constant(3), tf.constant(7)]  # top_k, seed
    generated = loaded.serve_generate(*arguments)
    again = loaded.serve_generate(*arguments)
    result = {
        "worst": worst,
        "steps": len(tokens),
        "texts": [t.decode() for t in generated["texts"].numpy()],
        "again": [t.decode() for t in again["texts"].numpy()],
        "lengths": generated["lengths"].numpy().tolist(),
        "modules": sorted(m for m in ("keras", "zoo", "jax") if m in sys.modules),
    }
    with open(out, "w") as file:
        json.dump(result, file)


def state_of(outputs):
    return {name: value for name, value in outputs.items() if name.startswith("state_")}


if __name__ == "__main__":
    main(*sys.argv[1:4])
