"""Ctrl-C at a chosen moment of `python -m training.train`'s start-up.

`interrupt_at(backend, delay, folder)` starts a training as from a terminal,
sends SIGINT `delay` seconds later, and returns its exit status and the
lines it wrote to stderr. `tests/training/runs/probe_run_dirs_test.py` tries
a few moments; run as a script it makes 20 timed tries per backend, spread
over the start-up (the imports of TensorFlow, Keras and JAX), and prints the
counts of tries that ended as a Ctrl-C should: exit status 130 and one line.

    python -m tests.training.startup_interrupts [TRIES]
"""

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# From when the project's code runs (Python's own start takes up to ~0.5 s
# here under load) to well into the imports of TensorFlow, Keras and JAX.
FIRST, LAST = 0.8, 12.0


@contextlib.contextmanager
def ctrl_c_at_its_default():
    """SIGINT at Python's own handler within the block, as a terminal gives it.

    A suite started in the background (`cmd &` in a script) ignores SIGINT,
    a child inherits an ignored signal, and Python then leaves it ignored
    (so does a command, for its own handler): the Ctrl-C would never be
    seen. A handler, unlike SIG_IGN, is reset to the default when a child
    starts its program.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def started_as_from_a_terminal(command, environment):
    """`command` started in the repository with Ctrl-C at its default, its
    stderr piped and its stdout dropped."""
    with ctrl_c_at_its_default():
        return subprocess.Popen(
            command,
            cwd=ROOT,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )


def interrupt_at(backend, delay, folder):
    """`(exit status, [stderr lines])` of a training interrupted at `delay` s."""
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "KERAS_BACKEND": backend,
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    command = [sys.executable, "-m", "training.train", "tiny_dyck_lstm"]
    command += ["train.epochs=100000", "train.early_stopping_patience=100000"]
    command += ["--run-dir", str(Path(folder) / "run"), "--no-export"]
    process = started_as_from_a_terminal(command, environment)
    try:
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=300)
    finally:
        process.kill()
        process.wait()
    lines = [line for line in err.decode().splitlines() if line.strip()]
    return process.returncode, lines


def delays(tries):
    step = (LAST - FIRST) / max(tries - 1, 1)
    return [FIRST + step * index for index in range(tries)]


def one_line_130(status, lines):
    return status == 130 and len(lines) == 1 and "interrupted" in lines[0]


def main(tries=20):
    for backend in ("tensorflow", "jax"):
        good = 0
        for delay in delays(tries):
            with tempfile.TemporaryDirectory() as folder:
                status, lines = interrupt_at(backend, delay, folder)
            ok = one_line_130(status, lines)
            good += ok
            shown = lines[-1][:100] if lines else ""
            print(
                f"{backend} {delay:5.2f}s: exit {status} {len(lines)} line(s) {shown}"
            )
            if not ok:  # all it wrote, to tell a new failure from a known one
                print("\n".join(f"    {line}" for line in lines))
        print(f"{backend}: {good} of {tries} tries ended in one line with exit 130")
        sys.stdout.flush()


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
