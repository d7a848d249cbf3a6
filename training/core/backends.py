"""Which Keras backend trains: TensorFlow (the default) or JAX.

Keras 3 runs the zoo's models on either; the data pipelines (`tf.data`), the
tokenizer (tensorflow-text) and SavedModel export stay TensorFlow on both, so
TensorFlow is always installed and JAX is the optional extra
(`pip install ".[jax]"`). The backend is fixed per process by the
`KERAS_BACKEND` environment variable, read when Keras is first imported:

    KERAS_BACKEND=jax python -m training.train tiny_dyck_lstm train.jit_compile=auto

`require()` runs when `training` is imported (before Keras is), so a CLI
asked for a backend whose package is missing says how to install it in one
line instead of failing inside Keras's import. Nothing here imports Keras at
module level.
"""

import contextlib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

DEFAULT = "tensorflow"
# Backends this project trains on, and the extra that installs each backend's
# package (torch's runs the zoo's cells and builders; docs/cells.md, "Backends").
SUPPORTED = ("tensorflow", "jax")
EXTRAS = {"jax": "jax", "torch": "torch"}


class BackendUnavailable(ImportError):
    """The requested Keras backend's package is not installed (one line)."""


def requested():
    """The backend Keras will use, read as Keras reads it, without importing it.

    `KERAS_BACKEND`, else the `backend` of `$KERAS_HOME/keras.json` (default
    `~/.keras/keras.json`), else TensorFlow.
    """
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    home = os.environ.get("KERAS_HOME") or os.path.join(
        os.path.expanduser("~"), ".keras"
    )
    try:
        import json

        config = json.loads((Path(home) / "keras.json").read_text())
        return str(config.get("backend") or DEFAULT)
    except (OSError, ValueError, AttributeError):
        return DEFAULT


def is_installed(backend):
    """Whether the package of `backend` (`"jax"`, `"tensorflow"`, ...) imports."""
    return importlib.util.find_spec(backend) is not None


def missing_message(backend):
    """The one line that says how to install `backend`'s package.

    It names the interpreter that looked, so that a package installed in
    another environment than the one running is told apart from a missing one.
    """
    extra = EXTRAS.get(backend)
    how = (
        f'pip install "rnn-zoo[{extra}]" (from a checkout: pip install ".[{extra}]")'
        if extra
        else f"pip install {backend}"
    )
    return (
        f"The Keras backend {backend!r} (KERAS_BACKEND={backend}) needs the "
        f"{backend} package, which is not installed for {sys.executable}; "
        f"install it with: {how}"
    )


def require(backend=None):
    """Raises `BackendUnavailable` unless `backend`'s package is installed.

    `backend` defaults to `requested()`. Run from a command line
    (`python -m training...` or a `zoo-*` script), it prints the one line
    and exits with status 2 instead, as the CLIs do for a user's error.
    """
    backend = backend or requested()
    if backend not in ("numpy", "openvino") and not is_installed(backend):
        if _command_line():
            print(f"error: {missing_message(backend)}", file=sys.stderr)
            raise SystemExit(2)
        raise BackendUnavailable(missing_message(backend))


def _command_line():
    # While `python -m PACKAGE.MODULE` imports the package, sys.argv[0] is
    # "-m" (the documented placeholder until the module is found).
    program = sys.argv[0] if sys.argv else ""
    return program == "-m" or Path(program).name.startswith("zoo-")


def name():
    """The backend this process's Keras runs on (`keras.backend.backend()`)."""
    import keras

    return keras.backend.backend()


def is_tensorflow():
    """Whether Keras runs on TensorFlow here (`tf.distribute`, `tf.function`)."""
    return name() == "tensorflow"


def widest_float():
    """The widest float dtype Keras computes in here: `"float64"`, or
    `"float32"` on JAX unless `jax_enable_x64` is on.

    JAX's default is 32 bits: a float64 asked of it comes back float32 with
    a warning ("Explicitly requested dtype float64 ... is not available"),
    so exact NumPy-side scores ask for this instead of float64.
    """
    if name() != "jax":
        return "float64"
    import jax

    return "float64" if jax.config.read("jax_enable_x64") else "float32"


def describe(backend=None):
    """`{"name": backend, "version": its package's version}` (a run's record).

    `backend` defaults to this process's Keras backend; the version is the
    installed package's, read without importing it (None if missing).
    """
    backend = backend or name()
    try:
        version = importlib.metadata.version(backend)
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {"name": backend, "version": version}


class NoStrategy:
    """Stands in for `tf.distribute`'s default strategy on other backends.

    `scope()` does nothing: on JAX a model is built and fitted on the
    backend's default device, as Keras does without a distribution.
    """

    def scope(self):
        return contextlib.nullcontext()
