import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import scipy.stats

from tests.training.migrate_test import refused_until_migrated
from tests.training.runs.probe_run_dirs_test import children, interrupt_alone, running
from tests.training.tiny import TINY_RECOGNITION, TINY_TABLE
from training import reproduce, train
from training.core import compile_mode
from training.reproduction import (
    records,
    summary_page,
    table_runs,
    table_schema,
    table_summary,
)
from training.runs import run_dirs, run_files, runs
from training.tasks import recipes

BAD_INPUTS = [
    (["no_such_table"], "Unknown table 'no_such_table'"),
    (["{table}", "--only", "nope"], "has no row 'nope'"),
    (["{table}", "--seeds", "0"], "seeds must be an integer >= 1"),
    (["{table}", "--jobs", "0"], "--jobs must be >= 1"),
    (["{bad_key}"], "Unknown recipe key 'model.unitz'"),
    (["{bad_field}"], "unknown key 'recpie'"),
    (["{table}", "--shard", "2/2"], "shard 2/2 does not exist"),
    ([], "No table given"),
    (["{table}", "--aggregate-only"], "Nothing to aggregate"),  # issue 27, item 9
    (["{table}", "--report"], "expected no TABLE"),
    (["--report", "{tmp}/missing.md"], "is not a file"),
]


@pytest.mark.parametrize("argv, message", BAD_INPUTS)
def test_bad_input_is_one_line_and_exit_2(
    argv, message, tiny_table, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # the default --results is ./results
    bad_key = tmp_path / "bad_key.toml"
    bad_key.write_text(TINY_TABLE.replace("model.units=12", "model.unitz=12"))
    bad_field = tmp_path / "bad_field.toml"
    bad_field.write_text(
        TINY_TABLE.replace('recipe = "tiny_dyck_lstm"', 'recpie = "x"', 1)
    )
    paths = {"table": tiny_table, "bad_key": bad_key, "bad_field": bad_field}
    argv = [a.format(tmp=tmp_path, **paths) for a in argv]
    argv += ["--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert message in error and "\n" not in error
    assert not (tmp_path / "out").exists()  # nothing written
    assert not (tmp_path / "results").exists()


def _tree(folder):
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.mark.parametrize(
    "layout, option, message",
    [
        ("runs_file", "--out", "holds a file named runs"),
        ("under_file", "--out", "cannot be made"),
        ("under_file", "--results", "cannot be made"),
    ],
)
def test_an_out_that_cannot_be_written_is_one_line(
    layout, option, message, tiny_table, tmp_path, capsys, monkeypatch
):
    # issue 27, item 8: these ended in tracebacks, after writing.
    monkeypatch.chdir(tmp_path)  # the default --results is ./results
    folders = {"--out": tmp_path / "out"}
    if layout == "runs_file":
        folders[option].mkdir()
        (folders[option] / "runs").write_text("not a folder\n")
    else:
        (tmp_path / "blocker").write_text("a file\n")
        folders[option] = tmp_path / "blocker" / "inside"
    before = _tree(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(
            [str(tiny_table), *(f for o, d in folders.items() for f in (o, str(d)))]
        )
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert message in error and option in error and "\n" not in error
    assert _tree(tmp_path) == before  # nothing written


def test_a_run_dir_with_another_recipe_is_refused(tiny_table, tmp_path, capsys):
    run_dir = tmp_path / "out" / "runs" / "small" / "seed-0"
    run_dir.mkdir(parents=True)
    other = recipes.resolve("tiny_dyck_lstm", overrides=["model.units=5"])
    run_files.record(run_dir, "recipe.json")  # as training does, before it
    (run_dir / "recipe.json").write_text(json.dumps(other.to_dict()))
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(
            [
                str(tiny_table),
                "--out",
                str(tmp_path / "out"),
                "--results",
                str(tmp_path / "results"),
            ]
        )
    assert exit_info.value.code == 2
    assert "holds a different recipe" in capsys.readouterr().err


TENSORFLOW = {"name": "tensorflow", "version": "2.21.0"}


def _metrics(wcpa, cross_entropy):
    return {
        "test": {"wcpa": wcpa, "cross_entropy": cross_entropy},
        "backend": TENSORFLOW,
    }


def _write_record(results_dir, table, row, seed, metrics, folder=None):
    """A record of `row` at `seed` written by hand, as the runner writes one."""
    run = table_schema.make_run(
        table, next(r for r in table.rows if r.name == row), seed, "unused"
    )
    folder = folder or records.record_dir(results_dir, table.name, row, seed)
    folder.mkdir(parents=True)
    files = {
        "recipe.json": run.recipe.to_dict(),
        "metrics.json": {"backend": TENSORFLOW, **metrics},
        "timing.json": {"seconds": 10.0 + seed, "attempts": 1},
        "host.json": {"cpu": "Test CPU", "cpus": 2},
        "record.json": {"parameters": 100 + len(row)},
    }
    for name, value in files.items():
        (folder / name).write_text(json.dumps(value))
    (folder / "log.csv").write_text("epoch,loss\n0,1.0\n")
    return folder


SEEDS = {  # test.wcpa, test.cross_entropy of three seeds a row
    "small": [(0.50, 1.00), (0.55, 0.95), (0.60, 0.90)],
    "wide": [(0.90, 0.50), (0.92, 0.45), (0.95, 0.40)],
}


@pytest.fixture
def recorded(tiny_table, tmp_path):
    """A results folder with three seeds of both rows of the tiny table."""
    table = table_schema.load_table(str(tiny_table))
    results_dir = tmp_path / "results"
    for row, seeds in SEEDS.items():
        for seed, values in enumerate(seeds):
            _write_record(results_dir, table, row, seed, _metrics(*values))
    return results_dir


def test_report_regenerates_the_marked_sections_only(tiny_table, recorded, tmp_path):
    document = tmp_path / "DOC.md"
    before = "# Title\n\nHand-written prose stays.\n\n"
    pasted = "\n| pasted | by hand |\n|---|---|\n| from old runs | 1.0 |\n"
    document.write_text(
        f"{before}<!-- table: {tiny_table} -->\nstale\n<!-- end table -->\n{pasted}"
    )
    argv = ["--report", str(document), "--results", str(recorded)]
    assert reproduce.main(argv) == 0
    text = document.read_text()
    assert text.startswith(f"{before}<!-- table: {tiny_table} -->\n### Tiny table\n")
    assert text.endswith(f"<!-- end table -->\n{pasted}")
    assert "stale" not in text
    assert "| small | 50.00 / 60.00 | 55.00 | 60.00 | 5.000 | 3 | 105 | 11 |" in text
    p = scipy.stats.ttest_ind(
        [0.50, 0.45, 0.40], [1.00, 0.95, 0.90], equal_var=False, alternative="less"
    ).pvalue
    assert p < 0.001
    assert (
        "| wide has lower cross-entropy than small | 0.450 vs 0.950 | 3 vs 3 "
        "| holds (Welch p < 0.001, Mann-Whitney p = 0.05) |" in text
    )
    assert "Runs: 6 on Test CPU (2 CPUs)." in text
    assert "Not run yet" not in text
    assert reproduce.main(argv) == 0  # again: nothing changes
    assert document.read_text() == text


def test_a_record_that_names_no_backend_is_refused_until_migrated(
    tiny_table, recorded, tmp_path, capsys
):
    folder = records.record_dir(recorded, "tiny", "small", 2)
    metrics = runs.read_json(folder / runs.METRICS)
    del metrics["backend"]  # as a record written before runs recorded it
    runs.write_json(folder / runs.METRICS, metrics)
    (folder / "host.json").write_text(json.dumps({"tensorflow": "2.16.1"}))
    document = tmp_path / "DOC.md"
    document.write_text(f"<!-- table: {tiny_table} -->\n<!-- end table -->\n")
    argv = ["--report", str(document), "--results", str(recorded)]
    path = folder / runs.METRICS
    printed = refused_until_migrated(reproduce.main, argv, path, capsys)
    assert printed.startswith(f"{folder}: metrics.json: backend tensorflow 2.16.1\n")
    assert runs.read_json(folder / runs.METRICS) == {
        **metrics,
        "backend": {"name": "tensorflow", "version": "2.16.1"},
    }
    assert reproduce.main(argv) == 0


def test_report_shows_the_rule_rows_of_a_recognition_table(tmp_path):
    path = tmp_path / "tiny_recognition.toml"
    path.write_text(TINY_RECOGNITION)
    table = table_schema.load_table(str(path))
    metrics = {"test": {"strict": 0.4, "strict_positives": 0.95}}
    recorded = tmp_path / "results"
    _write_record(recorded, table, "lstm", 0, metrics)
    document = tmp_path / "DOC.md"
    document.write_text(f"<!-- table: {path} -->\n<!-- end table -->\n")
    assert reproduce.main(["--report", str(document), "--results", str(recorded)]) == 0
    text = document.read_text()
    for rule in ("rule (D2): counting", "rule (palindrome): centre marker"):
        assert f"| {rule} | – | " in text  # in every metric's table
    assert "| lstm | – | 40.00 | 40.00 | – | 1 | 104 | 10 |" in text
    # learned the stack needs the hard test too: a record without it is not counted
    assert "| lstm | – | 95.0 | – | – |" in text
    assert "| rule (D2): majority class | 0 of 1 | 0.0 |" in text
    hard = text.split("**hard test, strict (%)**")[1].split("**")[0]
    assert "| lstm | – | – | – | – | 0 |" in hard  # recorded without the split


@pytest.mark.parametrize(
    "body, message",
    [
        ("<!-- table: nope -->\n<!-- end table -->\n", "Unknown table 'nope'"),
        ("<!-- table: {table} -->\nno end\n", "has no '<!-- end table -->' line"),
        ("text\n<!-- end table -->\n", "without a '<!-- table: NAME -->' line"),
    ],
)
def test_report_refuses_a_malformed_document(
    body, message, tiny_table, recorded, tmp_path, capsys
):
    document = tmp_path / "DOC.md"
    document.write_text(body.format(table=tiny_table))
    before = document.read_text()
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(["--report", str(document), "--results", str(recorded)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert message in error and "\n" not in error
    assert document.read_text() == before


def test_reproduction_md_is_what_the_records_give():
    """REPRODUCTION.md, every page under docs/reproduction/ and the figures'
    data files equal what `--report` gives from results/ (issue 60)."""
    root = Path(__file__).parents[2]
    texts, figures = summary_page.build(root, root / "results")
    assert len(figures) >= 5
    assert any(
        path.suffix == ".md" and path.parent.name == "reproduction" for path in texts
    )
    stale = sorted(
        path.relative_to(root).as_posix()
        for path, text in texts.items()
        if not path.is_file() or path.read_text() != text
    )
    assert stale == [], "run: python -m training.reproduce --report"
    for figure in figures:  # each data file has its picture, linked
        assert (root / summary_page.FIGURES / figure.name).is_file()
        assert (
            f"({summary_page.FIGURES.as_posix()}/{figure.name})"
            in (texts[root / summary_page.SUMMARY])
        )
    assert len(texts[root / summary_page.SUMMARY].splitlines()) <= 300


def test_report_writes_the_summary_pages_and_figures(tiny_table, recorded, tmp_path):
    """`--report` without FILE: the page's sections, REPRODUCTION.md with its
    claims and figures, each figure's PNG beside its CSV; a second run
    changes nothing (issue 60)."""
    root = tmp_path / "repo"
    (root / summary_page.PAGES).mkdir(parents=True)
    (root / summary_page.PAGES / "tiny.md").write_text(
        f"# A tiny paper\n\nProse.\n\n<!-- table: {tiny_table} -->\nstale\n"
        "<!-- end table -->\n"
    )
    (root / "benchmarks").mkdir()
    peers = (Path(__file__).parents[2] / "benchmarks" / "README.md").read_text()
    (root / "benchmarks" / "README.md").write_text(peers)
    line = summary_page.write(root, recorded)
    assert "REPRODUCTION.md" in line and "tiny.md" in line
    page = (root / summary_page.PAGES / "tiny.md").read_text()
    assert "stale" not in page and "### Tiny table" in page
    summary = (root / "REPRODUCTION.md").read_text()
    assert "| wide has lower cross-entropy than small | holds | Welch p < 0.001" in (
        summary
    )
    assert "[A tiny paper](docs/reproduction/tiny.md)" in summary
    speed = root / summary_page.FIGURES / "speed-against-peers.png"
    assert speed.is_file() and speed.with_suffix(".csv").is_file()
    assert "(docs/figures/speed-against-peers.png)" in summary
    assert summary_page.write(root, recorded).endswith(": 0 files changed")


def test_every_section_before_the_split_is_kept():
    """Each table marker and heading of REPRODUCTION.md before issue 60 moved
    it is still under docs/reproduction/ (the list: reproduction_sections.txt)."""
    root = Path(__file__).parents[2]
    listed = Path(__file__).parent / "reproduction" / "reproduction_sections.txt"
    wanted = [
        line for line in listed.read_text().splitlines() if not line.startswith("# ")
    ]
    assert len(wanted) > 50
    pages = [page.read_text().splitlines() for page in summary_page.pages(root)]
    lines = {line for page in pages for line in page}
    headings = [line.lstrip("#").strip() for line in lines if line.startswith("#")]
    missing = [
        line
        for line in wanted
        if line not in lines
        and not any(h.startswith(line.lstrip("#").strip()) for h in headings)
    ]
    assert missing == []


P_VALUES = r"Welch p [<=] [0-9.e-]+, Mann-Whitney p [<=] [0-9.e-]+"
VERDICT = re.compile(
    rf"(holds|within seed spread) \(({P_VALUES}|every seed equal: "
    rf"no difference)\)|reversed \({P_VALUES} for the opposite\)|"
    r"one seed: no verdict|not measured|"
    rf"too few seeds \(\d+ and \d+\): no verdict( \({P_VALUES}\))?"
)
CLAIM_LINE = re.compile(
    r"^\| [^|]+ \| [-0-9.,–]+ vs [-0-9.,–]+ \| (?:[^|]+ \| )?([^|]+) \|$"
)


def test_every_claim_line_of_reproduction_md_follows_the_verdict_rule():
    """Pasted sections too: no verdict from means alone, each with both tests'
    p-values."""
    root = Path(__file__).parents[2]
    text = "\n".join(page.read_text() for page in summary_page.pages(root))
    verdicts = [m[1] for m in map(CLAIM_LINE.match, text.splitlines()) if m]
    assert len(verdicts) > 50
    assert [v for v in verdicts if not VERDICT.fullmatch(v)] == []


def test_the_table_is_made_from_every_record(tiny_table, recorded, tmp_path, capsys):
    # issue 27, item 2: --only and --aggregate-only showed the selection alone.
    out = tmp_path / "out"
    argv = [str(tiny_table), "--out", str(out), "--results", str(recorded)]
    for extra in (["--only", "wide"], ["--only", "wide", "--aggregate-only"]):
        assert reproduce.main([*argv, "--seeds", "1", *extra]) == 0
        summary = json.loads((out / "tiny.json").read_text())
        assert [(r["row"], r["seed"]) for r in summary["runs"]] == [
            (row, seed) for row in SEEDS for seed in range(3)
        ]
        assert summary["missing"] == {}
    assert "1 runs (1 in this shard), 1 finished, 0 to train" in (
        capsys.readouterr().out
    )
    assert not (out / "runs").exists()  # nothing was trained


def test_a_record_of_the_same_recipe_is_copied_not_trained(
    tiny_table, tmp_path, capsys
):
    table = table_schema.load_table(str(tiny_table))
    results_dir = tmp_path / "results"
    _write_record(
        results_dir,
        table,
        "small",
        0,
        _metrics(0.5, 1.0),
        folder=results_dir / "other_table" / "other_row" / "seed-0",
    )
    out = tmp_path / "out"
    argv = ["--seeds", "1", "--only", "small", "--out", str(out)]
    assert reproduce.main([str(tiny_table), *argv, "--results", str(results_dir)]) == 0
    output = capsys.readouterr().out
    assert "small seed 0: same recipe as other_table/other_row/seed-0, copied" in output
    assert "1 runs (1 in this shard), 1 finished, 0 to train" in output
    record = results_dir / "tiny" / "small" / "seed-0"
    assert json.loads((record / "record.json").read_text()) == {
        "parameters": 105,
        "copied_from": "other_table/other_row/seed-0",
    }
    assert not (out / "runs").exists()


@pytest.mark.parametrize(
    "damage, message",
    [
        ("recipe", "holds a different recipe than row 'small'"),
        ("truncate", "metrics.json' is not valid JSON"),
        ("stray", "is not a row of table 'tiny'"),
    ],
)
def test_a_wrong_record_is_refused(
    damage, message, tiny_table, recorded, tmp_path, capsys
):
    record = recorded / "tiny" / "small" / "seed-0"
    if damage == "recipe":
        shutil.copy(recorded / "tiny" / "wide" / "seed-0" / "recipe.json", record)
    elif damage == "truncate":
        (record / "metrics.json").write_text('{"test": {"wc')
    else:
        (recorded / "tiny" / "old_row").mkdir()
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(
            [str(tiny_table), "--out", str(tmp_path / "o"), "--results", str(recorded)]
        )
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert message in error and "\n" not in error
    assert not (tmp_path / "o").exists()


class TrainingHere:
    """Stands in for `subprocess.Popen` of a run's `training.train` command
    (`table_runs.Job`): trains in this process, to the end, writing what the
    command prints to the run's log, and is then a finished process.

    The runner's own processes (started, killed, resumed, in shards) are the
    `processes` tests' below; these tests read what a finished run leaves.
    """

    def __init__(self, command, stdout, **kwargs):
        assert command[1:3] == ["-m", "training.train"], command
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stdout):
            try:
                self.returncode = train.main(command[3:])
            except SystemExit as stop:  # a refused argument or an interrupt
                self.returncode = stop.code

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        return self.returncode


@pytest.fixture
def training_here(monkeypatch):
    monkeypatch.setattr(table_runs.subprocess, "Popen", TrainingHere)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The tiny table at one seed, trained once: its file, OUT and RESULTS."""
    folder = tmp_path_factory.mktemp("trained")
    table = folder / "tiny.toml"
    table.write_text(TINY_TABLE)
    out, records = folder / "out", folder / "results"
    argv = ["--seeds", "1", "--jobs", "2", "--out", str(out), "--results"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(table_runs.subprocess, "Popen", TrainingHere)
        assert reproduce.main([str(table), *argv, str(records)]) == 0
    return table, out, records


def _copy_out(trained, tmp_path):
    """A copy of the trained OUT without its aggregate."""
    copy = tmp_path / "out"
    shutil.copytree(trained[1], copy)
    for name in ("tiny.md", "tiny.json"):
        (copy / name).unlink()
    return copy


def test_finished_runs_are_recorded_and_not_trained_again(trained, tmp_path, capsys):
    table, out, records = trained
    record = records / "tiny" / "small" / "seed-0"
    assert sorted(path.name for path in record.iterdir()) == [
        "host.json",
        "log.csv",
        "metrics.json",
        "recipe.json",
        "record.json",
        "timing.json",
    ]  # no weights
    run_dir = out / "runs" / "small" / "seed-0"
    for name in ("recipe.json", "metrics.json", "log.csv", "timing.json"):
        assert (record / name).read_bytes() == (run_dir / name).read_bytes()
    host = json.loads((record / "host.json").read_text())
    assert host["cpu"] and host["cpus"] >= 1 and host["tensorflow"]
    assert json.loads((record / "record.json").read_text())["parameters"] > 0
    summary = json.loads((out / "tiny.json").read_text())
    assert summary["runs"][0]["host"].startswith(host["cpu"])
    # The vector instructions tell two hosts of one CPU name apart.
    assert host["cpu_features"] == compile_mode.cpu_features()
    assert " ".join(host["cpu_features"]) in summary["runs"][0]["host"]

    fresh = tmp_path / "fresh"  # another machine: the records, no run directory
    argv = ["--seeds", "1", "--out", str(fresh), "--results", str(records)]
    assert reproduce.main([str(table), *argv]) == 0
    assert "2 runs (2 in this shard), 2 finished, 0 to train" in capsys.readouterr().out
    assert not (fresh / "runs").exists()
    assert (fresh / "tiny.md").read_text() == (out / "tiny.md").read_text()


def test_aggregate_only_takes_every_finished_row(trained, tmp_path, monkeypatch):
    # issue 27, item 2, from run directories (before any record existed).
    out = _copy_out(trained, tmp_path)
    monkeypatch.chdir(tmp_path)  # the default --results is ./results
    argv = [str(trained[0]), "--seeds", "1", "--out", str(out), "--only", "wide"]
    assert reproduce.main([*argv, "--aggregate-only"]) == 0
    summary = json.loads((out / "tiny.json").read_text())
    assert [(r["row"], r["seed"]) for r in summary["runs"]] == [
        ("small", 0),
        ("wide", 0),
    ]
    assert (tmp_path / "results" / "tiny" / "small" / "seed-0").is_dir()


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


DAMAGES = [
    ("metrics.json", _truncate, "metrics.json is not valid JSON"),
    (
        "timing.json",
        lambda path: path.write_text('{"seconds": "soon"}'),
        "timing.json is not the runner's timing",
    ),
    ("best.keras", _truncate, "best.keras is missing or not a .keras file"),
]


@pytest.mark.parametrize("name, damage, reason", DAMAGES)
def test_a_damaged_run_is_named_and_left_out(
    name, damage, reason, trained, tmp_path, capsys, monkeypatch
):
    # issue 27, item 7: each of these stopped the runner with a traceback.
    monkeypatch.chdir(tmp_path)  # the default --results is ./results
    out = _copy_out(trained, tmp_path)
    damage(out / "runs" / "small" / "seed-0" / name)
    argv = ["--seeds", "1", "--out", str(out)]
    assert reproduce.main([str(trained[0]), *argv, "--aggregate-only"]) == 0
    assert (
        f"small seed 0: damaged ({reason}); left out of the table"
        in capsys.readouterr().out
    )
    summary = json.loads((out / "tiny.json").read_text())
    assert [(r["row"], r["seed"]) for r in summary["runs"]] == [("wide", 0)]
    assert summary["missing"] == {"small": [0]}
    assert "Not run yet: small (seed 0)." in (out / "tiny.md").read_text()


def test_a_damaged_run_is_trained_again(trained, training_here, tmp_path, capsys):
    out = _copy_out(trained, tmp_path)
    run_dir = out / "runs" / "small" / "seed-0"
    _truncate(run_dir / "metrics.json")
    argv = ["--seeds", "1", "--out", str(out), "--results", str(tmp_path / "r")]
    assert reproduce.main([str(trained[0]), *argv]) == 0
    output = capsys.readouterr().out
    assert (
        "small seed 0: damaged (metrics.json is not valid JSON); set aside, to be "
        "trained again" in output
    )
    assert "2 runs (2 in this shard), 1 finished, 1 to train" in output
    assert (run_dir / "metrics.json.damaged").is_file()
    original = trained[1] / "runs" / "small" / "seed-0" / "metrics.json"
    assert (run_dir / "metrics.json").read_text() == original.read_text()
    assert (tmp_path / "r" / "tiny" / "small" / "seed-0" / "metrics.json").is_file()


def _complete_summary(out, seeds=2):
    """The tiny table's JSON summary, checked to hold every row x seed."""
    summary = json.loads((out / "tiny.json").read_text())
    assert summary["missing"] == {}
    assert sorted((r["row"], r["seed"]) for r in summary["runs"]) == [
        (row, seed) for row in ("small", "wide") for seed in range(seeds)
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
            "--results",
            str(out.parent / "results"),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, killed as a whole
    )


# The processes tests run the tiny table at one seed: a row's two seeds
# train by the same path, and each run is a process of its own (seconds of
# importing TensorFlow). The runs of one runner at once (`--jobs 2`) are the
# `trained` fixture's, the same command training in this process.


@pytest.mark.processes
def test_runs_resumes_after_a_kill_and_aggregates(tiny_table, tmp_path):
    out = tmp_path / "out"
    first = out / "runs" / "small" / "seed-0"
    runner = _runner(tiny_table, out, "--seeds", "1", "--jobs", "1")
    deadline = time.monotonic() + 240
    while not (first / "metrics.json").exists():
        assert runner.poll() is None, runner.stdout.read()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    child = children(runner.pid)
    os.killpg(runner.pid, signal.SIGKILL)  # the runner; its child trains on
    runner.wait()
    for pid in child:  # a process group of its own: killed as well
        os.kill(pid, signal.SIGKILL)
    finished = (first / "metrics.json").stat().st_mtime_ns
    assert not (out / "tiny.md").exists()

    result = _runner(tiny_table, out, "--seeds", "1", "--jobs", "2")
    output, _ = result.communicate(timeout=600)
    assert result.returncode == 0, output
    assert "2 runs (2 in this shard), 1 finished, 1 to train" in output
    assert (first / "metrics.json").stat().st_mtime_ns == finished  # not rerun
    summary = _complete_summary(out, seeds=1)
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
    # a line per run it trained
    assert re.findall(r"^\w+ seed \d+: ", output, re.MULTILINE) == ["wide seed 0: "]


@pytest.mark.processes
def test_sigint_to_the_runner_alone_stops_its_run_and_lets_go_of_it(
    tiny_table, tmp_path
):
    # `kill -INT` to the runner alone once left its training child running,
    # holding the run's lock; the signal is passed on, and only once. One
    # row of the tiny table that trains until it is stopped.
    long = TINY_TABLE.split("[[row]]")[0] + (
        '[[row]]\nname = "small"\nrecipe = "tiny_dyck_lstm"\n'
        'overrides = ["train.epochs=100000", "train.early_stopping_patience=100000"]\n'
    )
    tiny_table.write_text(long)
    out = tmp_path / "out"
    first = out / "runs" / "small" / "seed-0"
    runner = _runner(tiny_table, out, "--seeds", "1", "--jobs", "1")
    # Once an epoch of the run is backed up.
    output, _, trainings = interrupt_alone(runner, (first / "backup").exists)
    assert len(trainings) == 1, trainings
    assert runner.returncode == 130, output
    assert not running(trainings[0])
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines[-2] == "small seed 0: stopped; the same command resumes it", lines
    assert lines[-1].startswith("python -m training.reproduce: interrupted; "), lines
    assert "Traceback" not in output
    assert (first / "backup").exists() and not (first / "metrics.json").exists()
    with open(first / table_runs.LOCK, "a") as lock:  # let go: the run resumes
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)


class Killed:
    """A training process killed as soon as it started (`subprocess.Popen`'s
    stand-in): the runner's bookkeeping is what is tested."""

    def __init__(self, command, **kwargs):
        self.returncode = None

    def kill(self):
        self.returncode = -signal.SIGKILL

    def wait(self, timeout=None):
        return self.returncode


def test_the_runner_records_its_files_before_it_writes_them(
    tiny_table, tmp_path, monkeypatch
):
    # Without them in the manifest, training would refuse the folder the
    # runner made (it holds files no command recorded).
    monkeypatch.setattr(table_runs.subprocess, "Popen", Killed)
    table = table_schema.load_table(str(tiny_table))
    run = table_schema.make_run(table, table.rows[0], 0, tmp_path / "out")
    job = table_runs.Job(run, threads=1)
    job.process.kill()
    job.log.close()
    job.release()
    assert run_files.owned(run.run_dir) == set(run_dirs.RUNNER)
    run_dirs.check_owned(run.run_dir)


def test_a_resumed_run_does_not_count_the_time_it_lay_killed(
    tiny_table, tmp_path, monkeypatch
):
    monkeypatch.setattr(table_runs.subprocess, "Popen", Killed)
    # A run killed 1,000 s ago, 10 s into its first attempt (after 5 s of
    # earlier attempts), resumed now: the killed attempt counts 10 s.
    table = table_schema.load_table(str(tiny_table))
    run = table_schema.make_run(table, table.rows[0], 0, tmp_path / "out")
    run.run_dir.mkdir(parents=True)
    # Recorded before they were written, by the runner and by training.
    run_files.record(run.run_dir, ".lock", "train.log", "timing.json", "log.csv")
    killed_at = time.time() - 1000
    timing = {"seconds": 5.0, "attempts": 1, "started": killed_at - 10}
    (run.run_dir / "timing.json").write_text(json.dumps(timing))
    os.utime(run.run_dir / "timing.json", (killed_at - 10, killed_at - 10))
    for name in (".lock", "train.log", "log.csv"):
        (run.run_dir / name).write_text("")
        os.utime(run.run_dir / name, (killed_at, killed_at))
    job = table_runs.Job(run, threads=1)
    job.process.kill()
    job.process.wait()
    job.log.close()
    job.release()
    resumed = json.loads((run.run_dir / "timing.json").read_text())
    assert resumed["seconds"] == pytest.approx(15.0, abs=0.01)
    assert resumed["attempts"] == 2


@pytest.mark.processes
def test_two_shards_run_concurrently_and_aggregate_once(tiny_table, tmp_path):
    out = tmp_path / "out"
    shards = [
        _runner(tiny_table, out, "--seeds", "1", "--shard", f"{i}/2") for i in range(2)
    ]
    outputs = [shard.communicate(timeout=600)[0] for shard in shards]
    for shard, output in zip(shards, outputs, strict=True):
        assert shard.returncode == 0, output
        assert "2 runs (1 in this shard), 0 finished, 1 to train" in output
        assert "trained by another process" not in output  # disjoint shares
    assert sum("written: " in output for output in outputs) == 1
    _complete_summary(out, seeds=1)
    assert "| small | 50.00 / 60.00 |" in (out / "tiny.md").read_text()


def test_a_host_is_described_with_its_vector_instructions_when_recorded():
    old = {"cpu": "AMD EPYC", "cpus": 2}  # a record from before cpu_features
    assert records.describe_host(old) == "AMD EPYC (2 CPUs)"
    new = {**old, "cpu_features": ["avx2", "fma", "avx512f"]}
    assert records.describe_host(new) == "AMD EPYC (2 CPUs, avx2 fma avx512f)"


HISTORY_METRICS = """
[[metric]]
key = "history.first_epoch_val_wcpa_at_least_0.9"
label = "first epoch with validation WCPA >= 0.9"
better = "lower"

[[metric]]
key = "history.fall_val_wcpa"
label = "total fall of validation WCPA"
better = "lower"

[[row]]"""


def test_history_metrics_are_read_from_each_records_log(tiny_table, tmp_path):
    path = tmp_path / "curves.toml"
    path.write_text(
        tiny_table.read_text()
        .replace("[[row]]", HISTORY_METRICS, 1)
        .replace('metric = "test.cross_entropy"', 'metric = "history.fall_val_wcpa"')
    )
    table = table_schema.load_table(str(path))
    results_dir = tmp_path / "results"
    logs = {  # small: steady; wide: oscillating, and seed 2 from before val_wcpa
        ("small", 0): "epoch,loss,val_loss,val_wcpa\n0,1,1,0.2\n1,1,1,0.95\n",
        ("small", 1): "epoch,loss,val_loss,val_wcpa\n0,1,1,0.5\n1,1,1,0.9\n",
        ("wide", 0): "epoch,loss,val_loss,val_wcpa\n0,1,1,0.9\n1,1,1,0.1\n",
        ("wide", 1): "epoch,loss,val_loss,val_wcpa\n0,1,1,0.3\n1,1,1,0.0\n",
        ("wide", 2): "epoch,loss,val_loss\n0,1,1\n1,1,1\n",
    }
    for (row, seed), log in logs.items():
        folder = _write_record(results_dir, table, row, seed, _metrics(0.5, 1.0))
        (folder / "log.csv").write_text(log)
    found = records.read_table_records(results_dir, table)
    assert [r["history"]["first_epoch_val_wcpa_at_least_0.9"] for r in found] == [
        2,
        2,
        1,
        None,  # never: not measured
        None,  # no val_wcpa column
    ]
    assert [r["history_lacks"] for r in found] == [[], [], [], [], ["val_wcpa"]]
    summary = table_summary.summarize(table, found, seeds=3)
    fall = {
        row["name"]: row["metrics"]["history.fall_val_wcpa"] for row in summary["rows"]
    }
    assert fall["small"]["mean"] == 0.0 and fall["small"]["n"] == 2
    assert fall["wide"]["mean"] == pytest.approx(0.55) and fall["wide"]["n"] == 2
    text = table_summary.markdown(table, summary)
    assert (
        "Records with no per-epoch val_wcpa in their log.csv (trained before it "
        "was logged): wide seed 2;" in text
    )


@pytest.mark.parametrize(
    "key, message",
    [
        ("history.best_epoch", "Unknown history quantity 'best_epoch'"),
        ("history.first_epoch_val_loss_below", "Unknown history quantity"),
    ],
)
def test_an_unknown_history_metric_is_one_line(tiny_table, tmp_path, key, message):
    path = tmp_path / "bad.toml"
    path.write_text(tiny_table.read_text().replace('"test.cross_entropy"', f'"{key}"'))
    with pytest.raises(table_schema.TableError, match=message) as error:
        table_schema.load_table(str(path))
    assert "\n" not in str(error.value)


def test_a_record_log_that_is_not_a_runs_log_is_one_line(tiny_table, tmp_path):
    path = tmp_path / "curves.toml"
    path.write_text(tiny_table.read_text().replace("[[row]]", HISTORY_METRICS, 1))
    table = table_schema.load_table(str(path))
    folder = _write_record(tmp_path / "results", table, "small", 0, _metrics(0.5, 1))
    (folder / "log.csv").write_text("loss\n1.0\n")
    with pytest.raises(table_schema.TableError, match="has no epoch column") as error:
        records.read_table_records(tmp_path / "results", table)
    assert "\n" not in str(error.value)
