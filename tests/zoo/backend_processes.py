"""Running a test module in a process of its own on another Keras backend.

Keras reads `KERAS_BACKEND` once, when it is first imported, so a test that
needs JAX or torch runs a module (`tests/zoo/backend_runs.py`,
`tests/training/jax_runs.py`) as `python -m MODULE ARGS` with the variable
set, and reads what it writes; `needs(backend)` skips it, saying how to
install the backend, where its package is missing. The JAX and torch tests
share these three pieces.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAMES = {"jax": "JAX", "torch": "torch"}


def needs(backend):
    """Skips a test, saying why, where `backend`'s package is not installed."""
    return pytest.mark.skipif(
        importlib.util.find_spec(backend) is None,
        reason=f'{backend} is not installed: pip install ".[test,{backend}]" '
        f"runs the {NAMES[backend]}-backend tests",
    )


def quiet_environment(**changes):
    """This process's environment, TensorFlow's C++ logs off, with `changes`."""
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **changes}


def run_module(backend, module, *args, timeout=600, python_options=()):
    """`python [python_options] -m module *args` on `backend`; returns its output.

    Fails the calling test with the end of its standard error unless it
    exits with status 0.
    """
    done = subprocess.run(
        [sys.executable, *python_options, "-m", module, *map(str, args)],
        cwd=ROOT,
        env=quiet_environment(KERAS_BACKEND=backend),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout
