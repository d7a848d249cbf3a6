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
"""

import os
import shutil
import tempfile

import pytest


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
