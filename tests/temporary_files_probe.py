"""What a suite leaves in the temporary folder, made on purpose.

Not collected with the suite (`python_files` is `*_test.py`):
`temporary_files_test` runs it in a pytest of its own, in worker processes,
with a `TMPDIR` of its own, and checks that nothing is left there.
"""

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import tensorflow as tf

# Converts a function with autograph (which writes it to a file in the
# temporary folder, removed at exit) and is killed before it can exit.
CHILD = """
import os, signal
import tensorflow as tf

@tf.function
def halve(x):
    while x > 1:
        x = x // 2
    return x

halve(tf.constant(9))
os.kill(os.getpid(), signal.SIGKILL)
"""


def generated():
    return set(Path(tempfile.gettempdir()).glob("__autograph_generated_file*.py"))


def test_this_process_converts_into_a_folder_of_its_own():
    @tf.function
    def halve(x):
        while x > 1:
            x = x // 2
        return x

    before = generated()
    assert int(halve(tf.constant(9))) == 1
    assert generated() - before
    assert Path(tempfile.gettempdir()).name.startswith("zoo-tests-")


def test_a_killed_child_leaves_its_file_in_that_folder(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    before = generated()
    done = subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert generated() - before
