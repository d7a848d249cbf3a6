"""What every test process shares: a temporary folder of its own, removed at its end.

TensorFlow's autograph writes each function it converts to an
`__autograph_generated_file*.py` in the system's temporary folder and removes
it when the process exits, which a killed process (the kill-and-resume
tests, a timed-out child) never does; tests and the code under test make
temporary folders too. So each pytest process (each pytest-xdist worker
runs its own session) points `tempfile` at a folder of its own, and the
processes its tests start at the same folder through `TMPDIR` (they inherit
the environment), and removes it when its session ends
(`tests/temporary_files_test.py` checks that nothing is left).

The two pytest-xdist workers (pyproject.toml's `-n 2`) are given whole
test files (`FileScheduling`), so a module's fixtures are made once; the
files that read the tiny runs of tests/training/conftest.py's session
fixtures go to one worker together, which trains each of them once.

XLA compiles without LLVM's optimizations and with its older loop-fusion
emitters here (`XLA_FLAGS`, which the processes the tests start inherit): a
test's compiled program runs a few steps, so compiling it costs more than
running it (the older emitters cut the compile-bound test files' CPU time
by about a fifth), and every program of a test (and of the runs it
compares) compiles alike.

Python's garbage collector is paused while the tests are collected (the
imports' objects live to the end: 6 CPU-s to collect them instead of 9)
and frozen once they are: the
objects TensorFlow, Keras and the test modules made on import live to the
end, and every full collection would walk them again (Keras Tuner collects
twice a trial; Keras's `clear_session` once). Full collections then run a
tenth as often as Python's default (`FULL_COLLECTION_EVERY`), and what
outlives one is frozen too, after the test it ran in: the functions
TensorFlow traced, the fixtures' runs and Keras's caches live on, and
walking them again made up most of the collector's time. Measured with a
`gc.callbacks` probe over `python -m pytest`, idle: the collector's own
time 8 and 26 s in two runs against 25 and 46 s in two without, the
largest worker's peak memory 2.7 GB both ways. The whole suite's time
moves more with the host's speed than with this: in turns, 172 and 195 s
with it against 178 and 193 s without.
"""

import functools
import gc
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Paused until the tests are collected (`pytest_collection_finish`): the
# imports make objects that live to the end and almost no garbage, and the
# full collections among them walked every one (as `training.cli.
# command_line.uncollected` avoids for a command).
gc.disable()

# Before TensorFlow or JAX compiles anything (they read it then).
UNOPTIMIZED = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {UNOPTIMIZED}".strip()

# tests/training/conftest.py's session fixtures: trained runs shared by files.
SHARED_RUNS = re.compile(r"\b(tiny_runs|dyck_run|language_model_run)\b")


@functools.cache
def reads_shared_runs(path):
    """Whether the test file at `path` asks for a `SHARED_RUNS` fixture."""
    return bool(SHARED_RUNS.search(Path(path).read_text()))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduler for `-n`: whole files (`FileScheduling`)."""
    from xdist.scheduler import LoadScopeScheduling

    # In collection order, not largest file first: tests/zoo's many small
    # files come last and even out the two workers' ends.
    config.option.loadscopereorder = False

    class FileScheduling(LoadScopeScheduling):
        """A file is a unit of work; the files of `SHARED_RUNS` are one."""

        def _split_scope(self, nodeid):
            path = nodeid.split("::")[0]
            shared = reads_shared_runs(config.rootpath / path)
            return "shared runs" if shared else path

    return FileScheduling(config, log)


# Full collections only after 100 young ones (Python's default: 10). After
# the freeze the collector's last full collection left little behind, so by
# its rule (a full collection once the survivors since grow by a quarter)
# TensorFlow's graphs and Keras's layers set one off every few tests: 10-14%
# of a test file's CPU time here. A higher count still collects every cycle;
# far higher ones leave gigabytes to the final collection at exit.
FULL_COLLECTION_EVERY = 100


def pytest_sessionstart(session):
    """pytest-xdist's controller collects no tests: it collects garbage again
    from its start."""
    config = session.config
    if getattr(config.option, "numprocesses", 0) and not hasattr(config, "workerinput"):
        gc.enable()


def pytest_collection_finish(session):
    """Moves what importing and collecting made out of the collector's sight."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
    gc.callbacks.append(_note_full_collection)
    gc.enable()


_collected_fully = False  # whether a full collection ran since the last freeze


def _note_full_collection(phase, info):
    global _collected_fully
    _collected_fully = _collected_fully or info["generation"] == 2


def pytest_runtest_teardown(item, nextitem):
    """Freezes what outlived a full collection made during the test."""
    global _collected_fully
    if _collected_fully:
        _collected_fully = False
        gc.freeze()


@pytest.fixture(autouse=True)
def op_determinism_off():
    """TensorFlow's op determinism off again after each test.

    A training run turns it on for graph steps (`training.core.compile_mode`)
    and leaves it on, and Keras then refuses XLA (a warning, and graph steps
    instead): a later test that compiles would test the graph. TensorFlow
    is left alone in a process that has not imported it (the other
    backends' runs, where a stand-in module keeps it out).
    """
    yield
    config = sys.modules.get("tensorflow.python.framework.config")
    if config is not None:
        config.disable_op_determinism()


@pytest.fixture(scope="session", autouse=True)
def session_temporary_folder(tmp_path_factory):
    """The folder `tempfile` uses in this test process, removed at its end."""
    tmp_path_factory.getbasetemp()  # pytest's own folders stay where it keeps them
    folder = tempfile.mkdtemp(prefix="zoo-tests-")
    before = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = folder
    try:
        yield folder
    finally:
        tempfile.tempdir = before[0]
        if before[1] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before[1]
        shutil.rmtree(folder, ignore_errors=True)
