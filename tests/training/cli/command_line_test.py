"""Commands answer at once and start TensorFlow quietly (training.cli.command_line).

The tests that start a command (`python -X importtime -m ...`) are marked
`processes`; `tests/layering_test.py` checks the same imports from the
source in the default run.
"""

import gc
import importlib
import os
import shlex
import subprocess
import sys
import tomllib
import weakref
from pathlib import Path

import pytest

from tests.layering_test import COMMANDS
from training import train
from training.cli import command_line
from training.core import recipe_files
from training.tasks import recipes

ROOT = Path(__file__).resolve().parents[3]
# What a command may import only once its arguments are read.
HEAVY = ("keras", "tensorflow", "tensorflow_text", "keras_tuner", "jax")
BANNER = "WARNING: All log messages before absl::InitializeLog() is called are "
BANNER += "written to STDERR\n"
NO_DRIVER = (
    "I0000 00:00:1795747877.087693    6398 cudart_stub.cc:31] Could not find "
    "cuda drivers on your machine, GPU will not be used.\n"
)
ONEDNN = (
    "I0000 00:00:1795747877.087315    6398 port.cc:153] oneDNN custom operations "
    "are on.\n"
)
WARNING = "W0000 00:00:1795747877.1    6398 some_file.cc:12] a warning\n"
CUINIT = (
    "E0000 00:00:1795747885.596740    6398 cuda_platform.cc:52] failed call to "
    "cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
)
ERROR = "E0000 00:00:1795747885.6    6398 op_kernel.cc:1] a real error\n"
PYTHON = "Traceback (most recent call last):\n"


def main_of(command):
    return importlib.import_module(command).main


def imported(importtime):
    """The modules `python -X importtime` says were imported."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in importtime.splitlines()
        if line.startswith("import time:") and "|" in line
    }


ARGUMENT_CASES = [
    *[(command, ["--help"], 0) for command in COMMANDS],
    *[(command, ["--no-such-option"], 2) for command in COMMANDS],
    ("training.train", ["--scale", "nope"], 2),
    ("training.train", ["nope"], 2),
    ("tuning.search", ["--recipe", "nope"], 2),
    ("training.reproduce", ["nope"], 2),
]


@pytest.mark.processes
@pytest.mark.parametrize("command, argv, status", ARGUMENT_CASES)
def test_help_and_a_bad_argument_import_neither_keras_nor_tensorflow(
    command, argv, status
):
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", command, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == status, done.stderr[-2000:]
    modules = imported(done.stderr)
    assert "training" in modules  # the report was read
    loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert not loaded, f"{command} {shlex.join(argv)} imported {loaded[:5]}"
    if status == 0:
        assert done.stdout.startswith("usage: ")
    else:
        errors = [line for line in done.stderr.splitlines() if "error:" in line]
        assert len(errors) == 1, done.stderr[-2000:]


@pytest.mark.processes
def test_a_command_on_a_cpu_machine_writes_no_cuda_error_or_startup_notice():
    environment = dict(os.environ)
    environment.pop("TF_CPP_MIN_LOG_LEVEL", None)  # the command's default
    done = subprocess.run(
        [sys.executable, "-m", "training.generate", "preset:lstm_dyck_m4"]
        + ["--prompt", "(a", "--length", "3"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("(a")
    assert "cuInit" not in done.stderr
    assert "absl::InitializeLog" not in done.stderr
    notices = [
        line
        for line in done.stderr.splitlines()
        if line[:1] in ("I", "W") and line[1:5].isdigit()
    ]
    assert not notices, done.stderr[-3000:]


@pytest.mark.parametrize(
    "lines, kept",
    [
        # Before TensorFlow reads its level: notices dropped, errors kept.
        ([BANNER, ONEDNN, WARNING, ERROR, PYTHON], [ERROR, PYTHON]),
        # cuInit fails because TensorFlow found no driver: dropped.
        ([BANNER, ONEDNN, NO_DRIVER, CUINIT, ERROR], [ERROR]),
        # A driver was found and cuInit still failed: a real error, kept.
        ([BANNER, ONEDNN, CUINIT], [CUINIT]),
    ],
)
def test_startup_filter_drops_notices_and_the_driverless_cuinit_only(lines, kept):
    keep = command_line.StartupFilter(level=2).keep
    assert [line for line in lines if keep(line)] == kept


def test_startup_filter_follows_the_level_the_user_set():
    lines = [BANNER, ONEDNN, NO_DRIVER, WARNING, CUINIT, ERROR, PYTHON]
    everything = command_line.StartupFilter(level=0).keep
    assert [line for line in lines if everything(line)] == lines
    errors_too = command_line.StartupFilter(level=3).keep
    assert [line for line in lines if errors_too(line)] == [PYTHON]


def test_filtered_stderr_filters_what_c_code_writes_to_descriptor_2(capfd):
    keep = command_line.StartupFilter(level=2).keep
    with command_line.filtered_stderr(keep):
        os.write(2, (BANNER + NO_DRIVER + CUINIT).encode())
        os.write(2, (ERROR + PYTHON).encode())
    os.write(2, CUINIT.encode())  # after the start: not filtered
    assert capfd.readouterr().err == ERROR + PYTHON + CUINIT


@pytest.mark.parametrize(
    "set_by_user, level", [(None, command_line.LOG_LEVEL), ("0", "0"), ("3", "3")]
)
def test_start_tensorflow_sets_a_log_level_unless_the_user_did(
    monkeypatch, set_by_user, level
):
    if set_by_user is None:
        monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    else:
        monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", set_by_user)
    command_line.start_tensorflow()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == level
    assert command_line.log_level() == int(level)


def test_train_help_lists_every_recipe_with_its_description(capsys):
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    names = recipe_files.available(recipe_files.RECIPE_DIR)
    assert len(names) > 10
    for name in names:
        path = recipe_files.RECIPE_DIR / f"{name}.toml"
        description = tomllib.loads(path.read_text())["description"].split("; ")[0]
        assert f"  {name} " in text and f" {description}\n" in text, name
    listed = text.split("\nrecipes (")[1].split("\n\n")[0].splitlines()[1:]
    assert len(listed) == len(names)
    default = [line for line in listed if "(default)" in line]
    assert default == [line for line in listed if f"  {train.DEFAULT_RECIPE} " in line]
    assert "section.key=value" in text and train.OVERRIDES in text


def test_train_help_reads_the_recipe_folder(tmp_path, monkeypatch, capsys):
    (tmp_path / "mine.toml").write_text('description = "my own; with advice"\n')
    (tmp_path / "broken.toml").write_text("description = \n")
    monkeypatch.setattr(recipe_files, "RECIPE_DIR", tmp_path)
    with pytest.raises(SystemExit):
        train.main(["--help"])
    recipe_lines = capsys.readouterr().out.split("recipes (")[1].split("\n\n")[0]
    assert recipe_lines.splitlines()[1:] == [
        "  broken  (cannot be read as TOML)",
        "  mine    my own",
    ]


def test_train_help_override_examples_resolve():
    examples = train.OVERRIDES.split("For example:\n")[1].splitlines()
    assert len(examples) == 2
    for line in examples:
        recipe = recipes.resolve(train.DEFAULT_RECIPE, "small", line.split())
        for override in line.split():
            path, value = recipes.parse_override(override)
            assert recipe.value(".".join(path)) == value


class Parsed(Exception):
    """Raised by `parse_args` in `test_every_example_parses` once it parsed."""


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_a_description_and_examples_that_parse(
    command, capsys, monkeypatch
):
    main = main_of(command)
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    module = importlib.import_module(command)
    assert f"\n\n{module.__doc__.strip().splitlines()[0]}\n" in text
    examples = text.split("\nexamples:\n")[1].splitlines()
    commands = [line.strip() for line in examples if line.startswith("  python")]
    assert len(commands) >= 2 and len(examples) == 2 * len(commands)

    def parser(*args, **kwargs):  # parses as the command's, then stops
        made = make_parser(*args, **kwargs)
        for name in ("parse_args", "parse_intermixed_args"):
            parse = getattr(made, name)
            setattr(made, name, lambda argv, parse=parse: _stop(parse(argv)))
        return made

    make_parser = command_line.parser
    monkeypatch.setattr(command_line, "parser", parser)
    for line in commands:
        words = shlex.split(line)
        assert words[:3] == ["python", "-m", command]
        with pytest.raises(Parsed):
            main(words[3:])


def _stop(namespace):
    raise Parsed(namespace)


def test_train_examples_resolve():
    for command, _ in train.EXAMPLES:
        args = train.build_parser().parse_intermixed_args(shlex.split(command)[3:])
        recipes.resolve(args.recipe, args.scale, args.overrides)


class _Cycle:
    def __init__(self):
        self.me = self


def test_uncollected_pauses_the_collector_then_freezes_what_exists():
    frozen_before = gc.get_freeze_count()
    try:
        with command_line.uncollected():
            assert not gc.isenabled()
            cycle = weakref.ref(_Cycle())  # garbage only the collector finds
            kept = [[] for _ in range(10 * gc.get_threshold()[0])]
            assert cycle() is not None  # so many allocations, and no collection
        assert gc.isenabled()
        assert gc.get_freeze_count() >= frozen_before + len(kept)
    finally:
        gc.unfreeze()  # the test process's objects back to normal collection


def test_uncollected_leaves_a_paused_collector_paused():
    gc.disable()
    try:
        with command_line.uncollected():
            pass
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()


@pytest.mark.processes
def test_start_tensorflow_freezes_the_import_and_collects_after():
    code = (
        "import gc; from training.cli import command_line; "
        "command_line.start_tensorflow(); "
        "print(gc.isenabled(), gc.get_freeze_count())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    enabled, frozen = done.stdout.split()
    assert enabled == "True"
    assert int(frozen) > 100_000  # TensorFlow's and Keras's objects
