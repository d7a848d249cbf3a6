"""Issue 40's probe of the files read back, one row per case it found.

Each row failed on the code before the fix (a traceback, a wrong table
written with exit status 0, a silent fallback or a hang); each is now one
line on stderr, exit status 2, and nothing written (`REFUSALS`), or the
behaviour the issue asked for (`test_generation_...`). Rows whose old
behaviour was to train, load a model or sample for hours have a guard that
makes the old code fail at once instead (`GUARDS`).
"""

import hashlib
import json
import shutil

import pytest

import zoo.sampler
from tests.training.reproduce_test import _metrics, _write_record
from tests.training.tiny import TINY, TINY_TABLE, write_suites
from training import analyze, evaluate, generate, preset, reproduce, train
from training.core import fitting
from training.data import files
from training.reproduction import table_schema
from training.runs import generation, runs
from tuning import search

MAINS = {
    "train": train.main,
    "evaluate": evaluate.main,
    "generate": generate.main,
    "preset": preset.main,
    "reproduce": reproduce.main,
    "analyze": analyze.main,
    "search": search.main,
}


def _refuse(*args, **kwargs):
    raise AssertionError("the command went on past the input it should refuse")


# What would train, read a model or sample for hours on the old code fails
# at once instead (the new code refuses before it gets there).
GUARDS = {
    None: {},
    "no_training": {(runs, "train_run"): _refuse},
    "no_fit": {(fitting, "fit"): _refuse},
    "no_loading": {(runs, "load_run"): _refuse},
}

DOC = "{tmp}/DOC.md"
REPORT = ["--report", DOC, "--results"]
RECIPE_CASES = {"list": [1, 2], "empty": {}, "bogus_kind": None}

# (defect, case, command, argv, what the one line says, guard)
REFUSALS = [
    # 4: a row name wrote outside --out, then ended in a misleading error
    (
        4,
        "row name climbing out of --out",
        "reproduce",
        ["{escaping_table}", "--aggregate-only", "--out", "{tmp}/a/b/out"]
        + ["--results", "{tmp}/a/b/results"],
        "row[0].name must be a folder name",
        None,
    ),
    (
        4,
        "row name with a path separator",
        "reproduce",
        ["{slash_table}", "--aggregate-only", "--out", "{tmp}/out"]
        + ["--results", "{tmp}/results"],
        "row[1].name must be a folder name",
        None,
    ),
    # 6: the report wrote wrong tables and exited 0
    (6, "seed-01 beside seed-1", "reproduce", [*REPORT, "{seed01}"], "seed-N", None),
    (6, "a NaN metric", "reproduce", [*REPORT, "{nan}"], "test.wcpa must be", None),
    (
        6,
        "a metric as a string",
        "reproduce",
        [*REPORT, "{text}"],
        "received '1.5'",
        None,
    ),
    # 7: tracebacks instead of one line
    (
        7,
        "recipe.json [1, 2] to evaluate",
        "evaluate",
        ["{recipe_list}"],
        "recipe.json': the file's content must be an object",
        None,
    ),
    (
        7,
        "recipe.json {} to evaluate",
        "evaluate",
        ["{recipe_empty}"],
        "recipe.json': the file has no 'name'",
        None,
    ),
    (
        7,
        "recipe.json of task.kind bogus to evaluate",
        "evaluate",
        ["{recipe_bogus_kind}"],
        "recipe.json': Unknown task.kind 'bogus'",
        None,
    ),
    (
        7,
        "recipe.json [1, 2] to train",
        "train",
        ["tiny_dyck_lstm", "--run-dir", "{recipe_list}", "--no-export"],
        "recipe.json': the file's content must be an object",
        "no_fit",
    ),
    (
        7,
        "recipe.json {} to train",
        "train",
        ["tiny_dyck_lstm", "--run-dir", "{recipe_empty}", "--no-export"],
        "recipe.json': the file has no 'name'",
        "no_fit",
    ),
    (
        7,
        "recipe.json of task.kind bogus to train",
        "train",
        ["tiny_dyck_lstm", "--run-dir", "{recipe_bogus_kind}", "--no-export"],
        "recipe.json': Unknown task.kind 'bogus'",
        "no_fit",
    ),
    (
        7,
        "card.json [1] to --remeasure",
        "preset",
        ["--remeasure", "{bad_card}"],
        "card.json': the file's content must be an object",
        None,
    ),
    (
        7,
        'record.json "parameters": "lots"',
        "reproduce",
        [*REPORT, "{lots}"],
        "parameters must be an integer >= 0 or null; received 'lots'",
        None,
    ),
    (
        7,
        "curves of a column NaN in every epoch",
        "analyze",
        ["curves", "{nan_log}", "--out", "{tmp}/curves"],
        "or it is NaN in every epoch",
        None,
    ),
    (
        7,
        "search --directory a file",
        "search",
        ["--recipe", "tiny_dyck_lstm", "--units", "4", "--directory", "{file}"]
        + ["--max-trials", "1", "--verbose", "0"],
        "--directory",
        None,
    ),
    (
        7,
        "model.units=100000000000",
        "train",
        ["tiny_dyck_lstm", "model.units=100000000000", "--run-dir", "{tmp}/run"],
        "model.units must be >= 1 and <= 8192",
        "no_training",
    ),
    (
        7,
        "task.m=100000",
        "train",
        ["tiny_dyck_lstm", "task.m=100000", "--run-dir", "{tmp}/run"],
        "task.m must be >= 1 and <= 32",
        "no_training",
    ),
    # 8: minor
    (
        8,
        "task.data_dir that does not exist",
        "train",
        ["blimp_acceptability_lstm", *TINY["acceptability"]]
        + ["task.data_dir={tmp}/nonexistent", "--run-dir", "{tmp}/run"],
        "nonexistent' (task.data_dir or --data-dir) is not a folder",
        "no_fit",
    ),
    (
        8,
        "generate --length 100000000000",
        "generate",
        ["{dyck_run}", "--prompt", "(a", "--length", "100000000000"],
        "`length` must be <= 1,000,000 tokens",
        "no_loading",
    ),
    (
        8,
        "generate --seed -1",
        "generate",
        ["{dyck_run}", "--prompt", "(a", "--seed", "-1"],
        "`seed` must be an integer >= 0; received -1",
        None,
    ),
]


def _records(tmp_path, table_path):
    """Three seeds of both rows of the tiny table, and a document of them."""
    table = table_schema.load_table(str(table_path))
    good = tmp_path / "records" / "good"
    for row in ("small", "wide"):
        for seed in range(3):
            _write_record(good, table, row, seed, _metrics(0.5 + 0.1 * seed, 0.5))
    (tmp_path / "DOC.md").write_text(
        f"# Doc\n\n<!-- table: {table_path} -->\n<!-- end table -->\n"
    )
    assert (
        reproduce.main(["--report", str(tmp_path / "DOC.md"), "--results", str(good)])
        == 0
    )
    paths = {}
    for case in ("seed01", "nan", "text", "lots"):
        paths[case] = tmp_path / "records" / case
        shutil.copytree(good, paths[case])
    seeds = paths["seed01"] / "tiny" / "small"
    shutil.copytree(seeds / "seed-1", seeds / "seed-01")
    for case, value in (("nan", float("nan")), ("text", "1.5")):
        metrics = paths[case] / "tiny" / "small" / "seed-1" / "metrics.json"
        metrics.write_text(json.dumps({"test": {"wcpa": value, "cross_entropy": 0.5}}))
    record = paths["lots"] / "tiny" / "wide" / "seed-2" / "record.json"
    record.write_text('{"parameters": "lots"}')
    return paths


@pytest.fixture
def world(tmp_path, dyck_run, monkeypatch):
    """The files and folders the rows name, each with the defect of its case."""
    monkeypatch.chdir(tmp_path)
    paths = {"tmp": tmp_path, "dyck_run": dyck_run, "file": tmp_path / "file.txt"}
    paths["file"].write_text("not a folder\n")
    table = tmp_path / "tiny.toml"
    table.write_text(TINY_TABLE)
    paths.update(_records(tmp_path, table))
    escaping = tmp_path / "escaping.toml"
    escaping.write_text(TINY_TABLE.replace('"small"', '"../../../escaped"'))
    paths["escaping_table"] = escaping
    slash = tmp_path / "slash.toml"
    slash.write_text(TINY_TABLE.replace('"wide"', '"wi/de"'))
    paths["slash_table"] = slash
    for case, content in RECIPE_CASES.items():
        run_dir = tmp_path / f"recipe_{case}"
        shutil.copytree(dyck_run, run_dir)
        if content is None:
            content = json.loads((run_dir / runs.RECIPE).read_text())
            content["task"]["kind"] = "bogus"
        (run_dir / runs.RECIPE).write_text(json.dumps(content))
        paths[f"recipe_{case}"] = run_dir
    paths["bad_card"] = tmp_path / "preset"
    shutil.copytree(dyck_run, paths["bad_card"])
    (paths["bad_card"] / "card.json").write_text("[1]")
    paths["nan_log"] = tmp_path / "nan_log"
    paths["nan_log"].mkdir()
    (paths["nan_log"] / "log.csv").write_text(
        "epoch,loss,val_wcpa\n0,1.0,nan\n1,0.9,nan\n"
    )
    suites = write_suites(tmp_path / "zoo_data")  # where the old code fell back to
    monkeypatch.setenv(files.ENV_VAR, str(suites))
    return paths


def _snapshot(root):
    """Every path under `root` with the sha256 of each file's content."""
    return {
        str(path): path.is_dir() or hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(
    "defect, case, command, argv, message, guard",
    REFUSALS,
    ids=[f"{row[0]}: {row[1]}" for row in REFUSALS],
)
def test_a_bad_file_or_size_is_one_line_exit_2_and_nothing_written(
    defect, case, command, argv, message, guard, world, capsys, monkeypatch
):
    for (module, name), replacement in GUARDS[guard].items():
        monkeypatch.setattr(module, name, replacement)
    before = _snapshot(world["tmp"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        MAINS[command]([text.format(**world) for text in argv])
    error = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2, error
    assert message in error, error
    assert "\n" not in error and "Traceback" not in error
    assert _snapshot(world["tmp"]) == before  # REPRODUCTION.md's stand-in too


def test_generation_never_samples_padding_or_start(dyck_run):
    # A barely trained model at a high temperature draws nearly uniformly:
    # without the rule, <pad> and START come within a few tokens.
    for seed in range(3):
        tokens = generation.generate(dyck_run, "(a", 60, temperature=50.0, seed=seed)
        assert not {"<pad>", "START"} & set(tokens.split()), tokens


def test_generate_interrupted_while_sampling_is_one_line(dyck_run, capsys, monkeypatch):
    def interrupted(*args, **kwargs):  # Ctrl-C inside the compiled loop
        raise KeyboardInterrupt

    monkeypatch.setattr(zoo.sampler, "generate", interrupted)
    with pytest.raises(SystemExit) as stopped:  # Ctrl-C: one line, exit 130
        generate.main([str(dyck_run), "--prompt", "(a", "--length", "100"])
    assert stopped.value.code == 130
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.strip() == "python -m training.generate: interrupted"
