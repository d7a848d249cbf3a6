import json
import os
import signal
import subprocess
import sys
import time

import pytest

from training import reproduce, reproduction

TINY = """
title = "Tiny table"
source = "not a paper: two rows of the seconds-long tiny_dyck_lstm recipe"
seeds = 2

[[metric]]
key = "test.wcpa"
label = "test WCPA (%)"
factor = 100.0
better = "higher"

[[metric]]
key = "test.cross_entropy"
label = "test cross-entropy"
better = "lower"

[[row]]
name = "small"
recipe = "tiny_dyck_lstm"
paper = { "test.wcpa" = { mean = 50.0, best = 60.0 } }

[[row]]
name = "wide"
recipe = "tiny_dyck_lstm"
overrides = ["model.units=12"]

[[claim]]
text = "wide has lower cross-entropy than small"
metric = "test.cross_entropy"
better = "wide"
worse = "small"
"""


@pytest.fixture
def tiny_table(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


def test_summarize_computes_mean_best_std_and_claims(tiny_table):
    table = reproduction.load_table(str(tiny_table))
    results = [
        {
            "row": "small",
            "seed": 0,
            "seconds": 2.0,
            "metrics": {"test": {"wcpa": 0.5, "cross_entropy": 1.0}},
        },
        {
            "row": "small",
            "seed": 1,
            "seconds": 4.0,
            "metrics": {"test": {"wcpa": 0.7, "cross_entropy": 0.8}},
        },
        {
            "row": "wide",
            "seed": 0,
            "seconds": 3.0,
            "parameters": 10,
            "metrics": {"test": {"wcpa": 1.0, "cross_entropy": 0.5}},
        },
    ]
    summary = reproduction.summarize(table, results)
    small, wide = summary["rows"]
    wcpa = small["metrics"]["test.wcpa"]
    assert wcpa["n"] == 2
    assert wcpa["mean"] == pytest.approx(60.0)
    assert wcpa["best"] == pytest.approx(70.0)
    assert wcpa["std"] == pytest.approx(14.142135, rel=1e-6)  # ddof = 1
    assert wcpa["paper"] == {"mean": 50.0, "best": 60.0}
    entropy = small["metrics"]["test.cross_entropy"]
    assert entropy["best"] == pytest.approx(0.8)  # lower is better
    assert small["seconds"] == pytest.approx(3.0)
    assert wide["parameters"] == 10 and wide["metrics"]["test.wcpa"]["std"] == 0.0
    (claim,) = summary["claims"]
    assert claim["holds"] is True
    assert claim["better_mean"] == pytest.approx(0.5)
    assert claim["worse_mean"] == pytest.approx(0.9)
    text = reproduction.markdown(table, summary)
    assert "| small | 50.00 / 60.00 | 60.00 | 70.00 | 14.14 | 2 |" in text
    assert (
        "| wide has lower cross-entropy than small | 0.500 vs 0.900 | holds |" in text
    )
    assert "python -m training.train tiny_dyck_lstm model.units=12" in text


def test_every_shipped_table_resolves():
    for name in reproduction.available_tables():
        table = reproduction.load_table(name)
        runs = reproduction.plan(table, "unused", seeds=1)
        assert len(runs) == len(table.rows), name


def test_shards_split_the_runs_without_overlap(tiny_table):
    table = reproduction.load_table(str(tiny_table))
    planned = reproduction.plan(table, "out", seeds=3)
    shards = [reproduction.shard(planned, i, 2) for i in range(2)]
    assert sorted(r.run_dir for s in shards for r in s) == sorted(
        r.run_dir for r in planned
    )
    assert not set(r.run_dir for r in shards[0]) & set(r.run_dir for r in shards[1])


BAD_INPUTS = [
    (["no_such_table"], "Unknown table 'no_such_table'"),
    (["{table}", "--only", "nope"], "has no row 'nope'"),
    (["{table}", "--seeds", "0"], "seeds must be an integer >= 1"),
    (["{table}", "--jobs", "0"], "--jobs must be >= 1"),
    (["{bad_key}"], "Unknown recipe key 'model.unitz'"),
    (["{bad_field}"], "unknown key 'recpie'"),
    (["{table}", "--shard", "2/2"], "shard 2/2 does not exist"),
]


@pytest.mark.parametrize("argv, message", BAD_INPUTS)
def test_bad_input_is_one_line_and_exit_2(argv, message, tiny_table, tmp_path, capsys):
    bad_key = tmp_path / "bad_key.toml"
    bad_key.write_text(TINY.replace("model.units=12", "model.unitz=12"))
    bad_field = tmp_path / "bad_field.toml"
    bad_field.write_text(TINY.replace('recipe = "tiny_dyck_lstm"', 'recpie = "x"', 1))
    paths = {"table": tiny_table, "bad_key": bad_key, "bad_field": bad_field}
    argv = [a.format(**paths) for a in argv] + ["--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert message in error and "\n" not in error
    assert not (tmp_path / "out").exists()  # nothing written


def test_a_run_dir_with_another_recipe_is_refused(tiny_table, tmp_path, capsys):
    run_dir = tmp_path / "out" / "runs" / "small" / "seed-0"
    run_dir.mkdir(parents=True)
    (run_dir / "recipe.json").write_text(json.dumps({"name": "other"}))
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main([str(tiny_table), "--out", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert "holds a different recipe" in capsys.readouterr().err


def _complete_summary(out):
    """The tiny table's JSON summary, checked to hold every row x seed."""
    summary = json.loads((out / "tiny.json").read_text())
    assert summary["missing"] == []
    assert sorted((r["row"], r["seed"]) for r in summary["runs"]) == [
        ("small", 0),
        ("small", 1),
        ("wide", 0),
        ("wide", 1),
    ]
    return summary


def _runner(table, out, *extra):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "training.reproduce",
            str(table),
            "--out",
            str(out),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, killed as a whole
    )


def test_runs_resumes_after_a_kill_and_aggregates(tiny_table, tmp_path):
    out = tmp_path / "out"
    first = out / "runs" / "small" / "seed-0"
    runner = _runner(tiny_table, out, "--jobs", "1")
    deadline = time.monotonic() + 240
    while not (first / "metrics.json").exists():
        assert runner.poll() is None, runner.stdout.read()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    os.killpg(runner.pid, signal.SIGKILL)  # the runner and its training child
    runner.wait()
    finished = (first / "metrics.json").stat().st_mtime_ns
    assert not (out / "tiny.md").exists()

    result = _runner(tiny_table, out, "--jobs", "2")
    output, _ = result.communicate(timeout=600)
    assert result.returncode == 0, output
    assert "4 runs (4 in this shard), 1 finished, 3 to train" in output
    assert (first / "metrics.json").stat().st_mtime_ns == finished  # not rerun
    summary = _complete_summary(out)
    for run in summary["runs"]:
        metrics = json.loads(
            (
                out / "runs" / run["row"] / f"seed-{run['seed']}" / "metrics.json"
            ).read_text()
        )
        assert run["metrics"] == metrics
        assert run["seconds"] > 0
    small, wide = summary["rows"]
    assert wide["parameters"] > small["parameters"]
    assert "| small | 50.00 / 60.00 |" in (out / "tiny.md").read_text()
    assert output.count("seed") >= 3  # a line per finished run


def test_two_shards_run_concurrently_and_aggregate_once(tiny_table, tmp_path):
    out = tmp_path / "out"
    shards = [_runner(tiny_table, out, "--shard", f"{i}/2") for i in range(2)]
    outputs = [shard.communicate(timeout=600)[0] for shard in shards]
    for shard, output in zip(shards, outputs, strict=True):
        assert shard.returncode == 0, output
        assert "4 runs (2 in this shard), 0 finished, 2 to train" in output
        assert "trained by another process" not in output  # disjoint shares
    assert sum("written: " in output for output in outputs) == 1
    _complete_summary(out)
    assert "| small | 50.00 / 60.00 |" in (out / "tiny.md").read_text()
