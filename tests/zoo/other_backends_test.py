"""The cells and builders on Keras's torch backend, checked from TensorFlow.

`tests/zoo/backend_runs.py` runs in a `KERAS_BACKEND=torch` process of its
own (the backend is fixed per process, and TensorFlow and torch in one
process crash), with TensorFlow made unimportable there: the Keras cell
contract of every cell class, one training step of every registered cell in
`zoo.recognizer` and `zoo.language_model`, and a stateful model's carried
state. Skipped, saying why, where torch is not installed
(`pip install ".[test,torch]"` runs them, as `.ci/run` does).
"""

import json

import pytest

import zoo
from tests.zoo import backend_runs
from tests.zoo.backend_processes import needs, run_module

# JAX passes the same checks (docs/cells.md, "Backends"), but its contract
# took 28 minutes here (XLA compiles every test's loop): not in the suite.
BACKENDS = [pytest.param("torch", marks=needs("torch"))]


@pytest.fixture(scope="module", params=BACKENDS)
def ran(request, tmp_path_factory):
    """What `backend_runs` wrote on the backend: `{file stem: its JSON}`."""
    out = tmp_path_factory.mktemp(request.param)
    run_module(request.param, "tests.zoo.backend_runs", out)
    return {
        name: json.loads((out / f"{name}.json").read_text())
        for name in ("contract", "steps", "checks")
    }


@pytest.mark.processes
def test_every_cell_keeps_the_keras_contract(ran):
    contract = ran["contract"]
    failed = {
        test: outcome
        for test, outcome in contract["outcomes"].items()
        if outcome.startswith("failed")
    }
    assert not failed, "\n\n".join(f"{t}\n{o}" for t, o in failed.items())
    assert contract["status"] == 0
    zoo_cells = {
        zoo.get_cell_class(name).__name__
        for name in zoo.available_cells()
        if zoo.get_cell_class(name).__module__.startswith("zoo.")
    }
    assert set(contract["cells"].values()) == zoo_cells
    # Every contract class ran its tests, and they passed (skips: the tests
    # a cell that reads token ids has none of, as on TensorFlow).
    passed = {
        test.split("::")[1]
        for test, outcome in contract["outcomes"].items()
        if outcome == "passed"
    }
    assert passed == set(contract["cells"])
    skipped = {t for t, outcome in contract["outcomes"].items() if outcome == "skipped"}
    assert all("::test_stacked_cells" in test for test in skipped), skipped


@pytest.mark.processes
def test_every_registered_cell_trains_a_step_in_each_builder(ran):
    steps = ran["steps"]
    assert sorted(steps) == sorted(backend_runs.BUILDERS)
    for builder, losses in steps.items():
        assert sorted(losses) == zoo.available_cells()
        for cell, loss in losses.items():
            assert loss is not None, f"{builder} of {cell}: no weight changed"
            assert 0 < loss < 10, f"{builder} of {cell}: loss {loss}"


@pytest.mark.processes
def test_a_stateful_model_carries_its_state_as_on_tensorflow(ran):
    assert ran["checks"] == {"carried": True, "reset": True}
    assert backend_runs.stateful_checks() == ran["checks"]
