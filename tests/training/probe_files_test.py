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
from tests.training.reproduce_test import TENSORFLOW, _metrics, _write_record
from tests.training.tiny import TINY, TINY_TABLE, write_suites
from training import analyze, evaluate, generate, preset, reproduce, train
from training.core import fitting
from training.data import files
from training.reproduction import table_schema
from training.runs import generation, runs
from tuning import protocol, protocol_runs, search

MAINS = {
    "train": train.main,
    "evaluate": evaluate.main,
    "generate": generate.main,
    "preset": preset.main,
    "reproduce": reproduce.main,
    "analyze": analyze.main,
    "search": search.main,
    "protocol": protocol.main,
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
    "no_search": {(protocol_runs, "run_search"): _refuse},
}

DOC = "{tmp}/DOC.md"
REPORT = ["--report", DOC, "--results"]
RECIPE_CASES = {"list": [1, 2], "empty": {}, "bogus_kind": None}

SEARCH = ["--recipe", "tiny_dyck_lstm", "--units", "4", "--max-trials", "1"]
SEARCH += ["--verbose", "0"]
PROTOCOL_OUT = ["--directory", "{tmp}/tuning", "--record", "{tmp}/rec"]
# Keras Tuner's state in a record (`--record`), damaged but still JSON (issue 62),
# and otherwise whole: `tuner0.json` (Keras Tuner writes `{}`) is what makes
# the tuner read the others back.
WHOLE = {"tuner0.json": {}}
TUNER_CASES = {
    "trial_list": {**WHOLE, "trial_00/trial.json": [], "oracle.json": {}},
    "oracle_empty": {**WHOLE, "oracle.json": {}},
    "trial_id_only": {
        **WHOLE,
        "trial_00/trial.json": {"trial_id": 5},
        "oracle.json": {},
    },
}

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
        "`length` must be in [0, 1,000,000] tokens",
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
    # Issue 62 ("Nothing lost, round four"), numbered by its defects.
    # 2: text was cut at a NUL, silently
    (
        "62.2",
        "generate --prompt with a NUL",
        "generate",
        ["{dyck_run}", "--prompt", "(a\x00 a)", "--length", "3"],
        "control character U+0000 at character 2 (counted from 0)",
        None,
    ),
    # 4: a huge finite number was an OverflowError, or went into a card
    (
        "62.4",
        "a record's test.cross_entropy of 1e308",
        "reproduce",
        [*REPORT, "{huge}"],
        "test.cross_entropy must be a finite number >= 0 of magnitude <= 1e30",
        None,
    ),
    (
        "62.4",
        "a card's WCPA of 1e308 to --remeasure",
        "preset",
        ["--remeasure", "{huge_card}"],
        "remeasure.value must be a finite number of magnitude <= 1e30; received 1e+308",
        "no_loading",
    ),
    # 5: damaged tuner state that is still JSON was a traceback
    (
        "62.5",
        "trial.json []",
        "search",
        [*SEARCH, "--directory", "{tmp}/tuning", "--record", "{tuner_trial_list}"],
        "trial.json': the file's content must be an object",
        "no_fit",
    ),
    (
        "62.5",
        "oracle.json {}",
        "search",
        [*SEARCH, "--directory", "{tmp}/tuning", "--record", "{tuner_oracle_empty}"],
        "oracle.json': the file has no 'ongoing_trials'",
        "no_fit",
    ),
    (
        "62.5",
        'trial.json {"trial_id": 5}',
        "search",
        [*SEARCH, "--directory", "{tmp}/tuning", "--record", "{tuner_trial_id_only}"],
        "trial.json': the file has no 'hyperparameters'",
        "no_fit",
    ),
    # 6: an unwritable folder was a traceback once the work was done
    (
        "62.6",
        "search --directory /proc/x",
        "search",
        [*SEARCH, "--directory", "/proc/x"],
        "--directory '/proc/x' cannot be written",
        "no_fit",
    ),
    (
        "62.6",
        "search --record /proc/x",
        "search",
        [*SEARCH, "--directory", "{tmp}/tuning", "--record", "/proc/x"],
        "--record '/proc/x' cannot be written",
        "no_fit",
    ),
    (
        "62.6",
        "protocol --directory /proc/x",
        "protocol",
        ["stack_d2", "train.epochs=1", "--directory", "/proc/x"],
        "--directory '/proc/x' cannot be written",
        "no_search",
    ),
    # 8: a record without its test section was dropped from the table
    (
        "62.8",
        "a record without its test section",
        "reproduce",
        [*REPORT, "{no_test}"],
        "metrics.json has no 'test' section",
        None,
    ),
    # 10: tuning.protocol started its searches with numbers they refuse
    # (--threads 0 was refused already; its row keeps the three together)
    *(
        (
            "62.10",
            f"protocol {option} 0",
            "protocol",
            ["stack_d2", "--rows", "gru", option, "0", *PROTOCOL_OUT],
            f"{option} must be >= 1",
            "no_search",
        )
        for option in ("--max-trials", "--seeds-per-trial", "--threads")
    ),
    # 10: each key was within its limit, the model they ask for together not
    (
        "62.10",
        "model.units=8192 model.num_layers=64",
        "train",
        ["tiny_dyck_lstm", "model.units=8192", "model.num_layers=64"]
        + ["--run-dir", "{tmp}/run"],
        "model.num_layers × model.units² = 64 × 8192² is 4,294,967,296",
        "no_training",
    ),
    (
        "62.10",
        "model.units=8192 train.batch_size=65536",
        "train",
        ["tiny_dyck_lstm", "model.units=8192", "train.batch_size=65536"]
        + ["--run-dir", "{tmp}/run"],
        "train.batch_size × model.num_layers × model.units = 65536 × 1 × 8192",
        "no_training",
    ),
    (
        "62.10",
        "model.options.stack_depth=10000000",
        "train",
        ["recognition_d2_diffstk_rnn", "model.options.stack_depth=10000000"]
        + ["--run-dir", "{tmp}/run"],
        "model.options.stack_depth × stack_width) = 32 × 1 × (8 + 10000000 × 5)",
        "no_training",
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
    for case in ("seed01", "nan", "text", "lots", "huge", "no_test"):
        paths[case] = tmp_path / "records" / case
        shutil.copytree(good, paths[case])
    seeds = paths["seed01"] / "tiny" / "small"
    shutil.copytree(seeds / "seed-1", seeds / "seed-01")
    for case, value in (("nan", float("nan")), ("text", "1.5")):
        metrics = paths[case] / "tiny" / "small" / "seed-1" / "metrics.json"
        metrics.write_text(json.dumps({"test": {"wcpa": value, "cross_entropy": 0.5}}))
    changed = (("huge", {"test": {"wcpa": 0.5, "cross_entropy": 1e308}}),)
    no_test = {"dev": {"wcpa": 0.5, "cross_entropy": 0.5}, "backend": TENSORFLOW}
    changed += (("no_test", no_test),)
    for case, metrics in changed:
        path = paths[case] / "tiny" / "small" / "seed-1" / "metrics.json"
        path.write_text(json.dumps(metrics))
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
    for case, state in TUNER_CASES.items():
        paths[f"tuner_{case}"] = tmp_path / f"tuner_{case}"
        for name, content in state.items():
            path = paths[f"tuner_{case}"] / "keras_tuner" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(content))
    paths["huge_card"] = huge_card(dyck_run, tmp_path / "huge_card")
    suites = write_suites(tmp_path / "zoo_data")  # where the old code fell back to
    monkeypatch.setenv(files.ENV_VAR, str(suites))
    return paths


_PRESETS = {}


def huge_card(run_dir, path):
    """A preset of `run_dir` whose card says its test WCPA is 1e308 (made
    once, copied to `path`)."""
    if run_dir not in _PRESETS:
        from training.reproduction import preset_builder

        made = run_dir.parent / f"{run_dir.name}-preset"
        preset_builder.save_preset(run_dir, made)
        _PRESETS[run_dir] = made
    shutil.copytree(_PRESETS[run_dir], path)
    card = json.loads((path / "card.json").read_text())
    card["remeasure"]["value"] = 1e308
    (path / "card.json").write_text(json.dumps(card))
    return path


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


# Issue 62, defect 2: text was cut at a NUL. The tokenizer and the graph a
# SavedModel's serve_text runs (`TextScorer`) name the character instead.
# The run reads natural text (BLiMP's conventions): written in a corpus's
# conventions, the text was cut at the NUL (`the cat sees` of `The cat
# sees\x00 the dog.`) and scored, unknown words after it and all; a Dyck
# run's text is as written, where `(a\x00` was only an unknown token.


@pytest.fixture(scope="module")
def natural_text_run(tiny_runs):
    """The tiny acceptability run: a classifier of BLiMP-like sentences."""
    return tiny_runs("acceptability")[1]


CUT = ["The cat sees\x00 the dog.", "The cat\x00 zzz qqq."]  # cut at the NUL


def test_the_tokenizer_refuses_a_control_character(natural_text_run):
    tokenizer = runs.load_run(natural_text_run).tokenizer
    assert tokenizer.conventions == "blimp"
    for text in CUT:
        with pytest.raises(ValueError, match=r"control character U\+0000 at char"):
            tokenizer(text)
    with pytest.raises(ValueError, match=r"U\+0007 at character 3 of text 1"):
        tokenizer(["The cat sees the dog.", "The\x07 cat sees the dog."])


def test_serve_text_refuses_a_control_character(natural_text_run):
    import tensorflow as tf

    from zoo import serving

    run = runs.load_run(natural_text_run)
    scorer = serving.TextScorer(run.model, run.tokenizer, start_id=run.task.start_id)
    serve_text = tf.function(scorer, input_signature=[tf.TensorSpec([None], tf.string)])
    for text in CUT:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"U\+0000 at char"):
            serve_text(tf.constant(["The cat sees the dog.", text]))
    lengths = serve_text(tf.constant(["The cat\tsees the dog."]))["lengths"]
    assert lengths.numpy().tolist() == [6]  # a tab is white space
