"""The suite leaves nothing in the system's temporary folder (tests/conftest.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.processes
def test_a_suite_in_workers_with_a_killed_child_leaves_nothing_behind(tmp_path):
    # tests/temporary_files_probe.py converts functions with autograph in two
    # pytest-xdist workers and in a child it kills; its own folder says where.
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/temporary_files_probe.py", "-n", "2"],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(temporary), "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 passed" in done.stdout
    assert not list(temporary.rglob("__autograph_generated_file*"))
    left = [path.name for path in temporary.iterdir()]
    assert all(name.startswith("pytest-of-") for name in left), left
