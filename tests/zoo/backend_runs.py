"""Runs the cell contract and a training step of every cell on one Keras backend.

    KERAS_BACKEND=torch python -m tests.zoo.backend_runs OUT

The backend is fixed per process, so `tests/zoo/other_backends_test.py` runs
this in a subprocess per backend (JAX, torch) and reads what it writes:

- `OUT/contract.json`: the outcome of every test of the Keras cell contract
  (each `Test...Contract` class of `tests/zoo/cells`, run by pytest here) and
  the cell class each contract class builds;
- `OUT/steps.json`: for every registered cell and builder (`zoo.recognizer`,
  `zoo.language_model`), the loss of one `model.fit` step, or None where no
  weight changed;
- `OUT/checks.json`: `stateful_checks()` on this backend.

On a backend other than TensorFlow, TensorFlow is made unimportable before
any test runs: the cells and builders must not need it, and TensorFlow and
torch in one process crash (a segmentation fault, STYLE.md). Keras itself
then skips it too (`keras.utils.set_random_seed` seeds TensorFlow only where
it imports).
"""

import json
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

import zoo

ROOT = Path(__file__).resolve().parents[2]
VOCAB, UNITS = 7, 4
# Token ids inside the Dyck layout `dyck_rnn` reads (as in models_test.py).
IDS = np.random.default_rng(0).integers(1, VOCAB, size=(4, 6)).astype("int32")
LABELS = np.array([1, 0, 1, 0], "float32")


def fit_one_step(model, x, y):
    """One `model.fit` step on the whole batch: its loss, None if no weight moved."""
    before = [keras.ops.convert_to_numpy(w).copy() for w in model.trainable_weights]
    history = model.fit(x, y, batch_size=len(x), epochs=1, verbose=0)
    changed = any(
        not np.array_equal(b, keras.ops.convert_to_numpy(w))
        for b, w in zip(before, model.trainable_weights, strict=True)
    )
    return float(history.history["loss"][0]) if changed else None


def language_model_step(cell):
    model = zoo.language_model(cell, VOCAB, UNITS)
    model.compile(
        keras.optimizers.Adam(1e-2),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return fit_one_step(model, IDS[:, :-1], IDS[:, 1:])


def recognizer_step(cell):
    model = zoo.recognizer(cell, VOCAB, UNITS)
    model.compile(keras.optimizers.Adam(1e-2), **zoo.hybrid_recognition_loss())
    return fit_one_step(model, IDS, zoo.recognition_targets(IDS, LABELS))


BUILDERS = {"recognizer": recognizer_step, "language_model": language_model_step}


def every_cell_steps():
    """`{builder: {cell: loss of one step}}` for every registered cell."""
    steps = {}
    for builder, step in BUILDERS.items():
        steps[builder] = {}
        for cell in zoo.available_cells():
            keras.utils.set_random_seed(0)
            steps[builder][cell] = step(cell)
    return steps


def stateful_checks():
    """Does compiled `predict` carry a stateful model's state, and reset it?"""
    keras.utils.set_random_seed(3)
    model = zoo.language_model("lstm", 12, 8, stateful=True, batch_size=2)
    ids = np.arange(10, dtype="int32").reshape(2, 5) % 12
    first = model.predict_on_batch(ids)
    second = model.predict_on_batch(ids)
    zoo.reset_states(model)
    again = model.predict_on_batch(ids)
    return {
        "carried": bool(not np.allclose(first, second)),
        "reset": bool(np.allclose(first, again)),
    }


class ContractRecord:
    """A pytest plugin: each test's outcome and each contract class's cell."""

    def __init__(self):
        self.outcomes, self.cells = {}, {}

    def pytest_collection_modifyitems(self, items):
        for item in items:
            if item.cls is not None and item.cls.__name__ not in self.cells:
                self.cells[item.cls.__name__] = type(item.cls().make_cell()).__name__

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            outcome = report.outcome
            if report.failed:
                outcome = f"failed: {report.longreprtext[-1500:]}"
            self.outcomes[report.nodeid] = outcome


def run_contract(out):
    record = ContractRecord()
    status = pytest.main(
        [
            str(ROOT / "tests" / "zoo" / "cells"),
            "-k",
            "Contract",
            "-n",
            "0",
            "-q",
            f"--basetemp={out / 'pytest'}",
        ],
        plugins=[record],
    )
    return {"status": int(status), "outcomes": record.outcomes, "cells": record.cells}


def main(out):
    out = Path(out)
    if keras.backend.backend() != "tensorflow":
        assert "tensorflow" not in sys.modules, "imported before the tests ran"
        sys.modules["tensorflow"] = None  # any import of it now fails loudly
    (out / "contract.json").write_text(json.dumps(run_contract(out)))
    (out / "steps.json").write_text(json.dumps(every_cell_steps()))
    (out / "checks.json").write_text(json.dumps(stateful_checks()))


if __name__ == "__main__":
    main(sys.argv[1])
