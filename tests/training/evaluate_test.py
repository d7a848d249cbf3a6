import pytest

from training import runs
from training.evaluate import evaluate_run


def test_evaluation_repeats_the_runs_metrics_and_writes_them(dyck_run):
    task, metrics = evaluate_run(dyck_run, "test")
    assert metrics == runs.read_json(dyck_run / "metrics.json")["test"]
    assert runs.read_json(dyck_run / "evaluation-test.json") == metrics
    assert task.report(metrics, "test").startswith("test: WCPA ")


def test_bad_split_or_directory(dyck_run, tmp_path):
    with pytest.raises(ValueError, match="Unknown split 'long_120'"):
        evaluate_run(dyck_run, "long_120")
    with pytest.raises(runs.RunError, match="does not exist"):
        evaluate_run(tmp_path / "missing")
