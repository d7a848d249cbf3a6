"""Trains and reads tiny runs on the JAX backend; `backends_test` checks them.

    KERAS_BACKEND=jax python -m tests.training.jax_runs OUT

The backend is fixed per process, so the tests run this in a subprocess and
compare what it writes to OUT/jax.npz with the same computations on
TensorFlow in the test process:

- `OUT/dyck` (the `tiny_dyck_lstm` recipe), `OUT/recognition` (the tiny
  recognition recipe, with the Mali tables' state noise) and `OUT/lm/run`
  (the tiny stateful truncated-BPTT language model), trained with
  `runs.train_run`;
- `OUT/checks.json`: whether a stateful model's compiled `predict` carries
  its state from call to call (and resets), as TensorFlow's does
  (`tests.zoo.backend_runs.stateful_checks`, which torch runs too);
- each run's predictions on fixed ids, the language model's token losses
  (state carried), its dynamic evaluation, sentence scores and a sample;
- `OUT/dyck_saved`: the Dyck run exported from this (JAX) process with
  `--litert`, which writes it in a TensorFlow subprocess; its summary line
  is printed.
"""

import json
import sys
from pathlib import Path

import keras
import numpy as np

from tests.training.tiny import tiny_recipe, train_text_run
from tests.zoo.backend_runs import stateful_checks
from training.analysis import dynamic, targeted_syntax
from training.core import scoring
from training.runs import generation, runs, saved_model
from training.tasks import recipes

DYCK_IDS = np.array([[1, 3, 4, 6, 5], [1, 4, 3, 5, 6]], "int32")
RECOGNITION_IDS = np.array([[1, 3, 4, 6, 5, 2], [1, 3, 5, 4, 6, 2]], "int32")
SENTENCES = ["the cat sat on the mat", "the mat sat on the cat", "the dog"]
PROMPT = "the cat"


def language_model_results(run_dir):
    """What the checks compute on the language model, on either backend."""
    _, _, task, model = runs.load_run(run_dir)
    ids = task.encoded["test"].ids
    losses = scoring.token_losses(task.build_model, model, ids, rows=2, segment=7)
    evaluated = dynamic.dynamic_evaluation(
        task.build_model, model, ids, learning_rate=0.5, segment=9
    )
    scores, _ = targeted_syntax.score_sentences(model, task.vocabulary, SENTENCES)
    return {
        "lm_losses": losses,
        "lm_dynamic": np.array(
            [
                evaluated["static"]["cross_entropy"],
                evaluated["dynamic"]["cross_entropy"],
            ]
        ),
        "lm_sentences": scores,
    }


def main(out):
    out = Path(out)
    assert keras.backend.backend() == "jax", keras.backend.backend()
    dyck = recipes.resolve("tiny_dyck_lstm", "small", ["train.jit_compile=auto"])
    runs.train_run(dyck, out / "dyck")
    # Compiled, as JAX runs train ("auto"; tiny recipes otherwise skip XLA).
    recognition = tiny_recipe(
        "recognition",
        extra=[
            "train.epochs=1",
            "model.options.noise_stddev=0.1",
            "train.jit_compile=auto",
        ],
    )
    runs.train_run(recognition, out / "recognition")
    (out / "lm").mkdir()
    lm_run = train_text_run(out / "lm", extra=["train.jit_compile=auto"])
    arrays = {
        "dyck": runs.load_run(out / "dyck").model.predict(DYCK_IDS, verbose=0),
        **{
            f"recognition_{name}": value
            for name, value in runs.load_run(out / "recognition")
            .model.predict(RECOGNITION_IDS, verbose=0)
            .items()
        },
        **language_model_results(lm_run),
    }
    np.savez(out / "jax.npz", **arrays)
    (out / "checks.json").write_text(json.dumps(stateful_checks()))
    # Greedy (top_k=1): the backends' random generators differ, so seeded
    # draws do too (zoo.sampler); the likeliest tokens must not.
    sample = generation.generate(lm_run, PROMPT, 6, top_k=1)
    (out / "sample.json").write_text(json.dumps(sample))
    # --litert too: the TensorFlow subprocess that writes the export must
    # write what was asked of it (it once dropped the flag).
    saved = saved_model.export_run(out / "dyck", out / "dyck_saved", litert=True)
    print(saved_model.summary(saved))


if __name__ == "__main__":
    main(sys.argv[1])
