"""The compiled sampler on JAX, run by tests/zoo/sampler_test.py.

    KERAS_BACKEND=jax python -m tests.zoo.sampler_jax FOLDER

Loads `FOLDER/model.keras`, samples greedy and seeded, and writes
`FOLDER/jax.json` (with whether the jitted program is a `while` loop).
"""

import json
import sys
from pathlib import Path

import jax
import keras

from zoo.sampler import Sampler, generate

PROMPTS = [[1, 2, 3], [4], [5, 6]]


def main(folder):
    folder = Path(folder)
    assert keras.backend.backend() == "jax"
    model = keras.saving.load_model(folder / "model.keras")
    greedy = generate(model, PROMPTS, 7, greedy=True, stop_ids=[9])
    seeded = [
        generate(model, PROMPTS, 7, temperature=3.0, seed=s).ids for s in (3, 3, 4)
    ]
    sampler = Sampler(model)
    options = {"temperature": 1.0, "top_k": 11, "greedy": True, "seed": 0}
    options |= {"never": jax.numpy.zeros(11, bool), "stop": jax.numpy.zeros(11, bool)}
    text = str(
        jax.make_jaxpr(sampler.program, static_argnums=2)(
            jax.numpy.ones((1, 2), "int32"), jax.numpy.array([2]), 3, options
        )
    )
    result = {
        "greedy": greedy.ids.tolist(),
        "lengths": greedy.lengths.tolist(),
        "seeded": seeded[0].tolist(),
        "seeded_again": seeded[1].tolist(),
        "other_seed": seeded[2].tolist(),
        "while_loop": "while[" in text,
    }
    (folder / "jax.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
