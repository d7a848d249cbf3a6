import json
import shutil
from pathlib import Path

import pytest

from training import reproduce
from training.reproduction import backfill
from training.runs import runs

ROOT = Path(__file__).resolve().parents[3]
# A small-scale record (1,000 / 200 / 200 strings): its splits take a second.
RECORD = ROOT / "results" / "mm_dyck" / "lstm_lm_m4" / "seed-0"


def _without_oracle(metrics):
    metrics = json.loads(json.dumps(metrics))
    for split in ("valid", "test"):
        for key in backfill.ORACLE_KEYS:
            metrics[split].pop(key, None)
    return metrics


@pytest.fixture
def old_record(tmp_path):
    """A copy of RECORD as it was before the oracle: no oracle keys."""
    folder = tmp_path / "results" / "mm_dyck" / "lstm_lm_m4" / "seed-0"
    shutil.copytree(RECORD, folder)
    metrics = runs.read_json(folder / runs.METRICS)
    runs.write_json(folder / runs.METRICS, _without_oracle(metrics))
    record = runs.read_json(folder / backfill.RECORD)
    record.pop(backfill.BACKFILLED, None)
    runs.write_json(folder / backfill.RECORD, record)
    return folder


def test_backfill_restores_the_committed_oracle_metrics_exactly(old_record):
    lines = []
    changed = backfill.backfill(old_record.parents[2], report=lines.append)
    assert changed == [old_record] and len(lines) == 1
    assert runs.read_json(old_record / runs.METRICS) == runs.read_json(
        RECORD / runs.METRICS
    )
    record = runs.read_json(old_record / backfill.RECORD)
    assert record[backfill.BACKFILLED]["by"] == backfill.COMMAND
    assert "test.excess_over_oracle" in record[backfill.BACKFILLED]["keys"]
    # A record that has them is left alone.
    assert backfill.backfill(old_record.parents[2]) == []


def test_the_excess_is_the_records_cross_entropy_minus_the_oracles():
    metrics = runs.read_json(RECORD / runs.METRICS)
    recipe = runs.read_recipe(RECORD / runs.RECIPE)
    added = backfill.dyck_oracle_metrics(recipe, _without_oracle(metrics))
    for split in ("valid", "test"):
        excess = metrics[split]["cross_entropy"] - added[split]["oracle_cross_entropy"]
        assert added[split]["excess_over_oracle"] == pytest.approx(excess, abs=1e-12)
        assert added[split] == {key: metrics[split][key] for key in added[split]}


def test_a_record_of_other_data_is_refused_in_one_line(old_record):
    metrics = runs.read_json(old_record / runs.METRICS)
    metrics["test"]["ldpa_counts"]["1"] += 1  # as if the split had changed
    runs.write_json(old_record / runs.METRICS, metrics)
    with pytest.raises(runs.RunError, match="is not the one its metrics measured"):
        backfill.backfill(old_record.parents[2])


def test_backfill_is_a_command_of_its_own(capsys):
    with pytest.raises(SystemExit):
        reproduce.main(["so_dyck", "--backfill"])
    assert "--backfill changes the records only" in capsys.readouterr().err
