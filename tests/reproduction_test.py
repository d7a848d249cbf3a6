"""Reproductions of the papers' results; slow, so off by default.

Run them with `python -m pytest -m slow`.
"""

import pytest

from training.runs.runs import train_run
from training.tasks import recipes


@pytest.mark.slow
@pytest.mark.parametrize("m", [4, 6, 8])
def test_dyck_rnn_reaches_full_wcpa_for_every_bound(m, tmp_path):
    # The multi-matrix report, Table 2: the Dyck model has WCPA 100 for
    # m in {4, 6, 8}, with test strings up to twice the training length.
    recipe = recipes.resolve("dyck2_dyck_rnn", "small", [f"task.m={m}"])
    metrics = train_run(recipe, tmp_path / "run")
    assert metrics["valid"]["wcpa"] == 1.0
    assert metrics["test"]["wcpa"] == 1.0
