"""Ctrl-C during training is never lost.

Python runs a signal's handler in whatever Python code is running when the
signal arrives. When that code is a garbage collector's callback or a
`__del__` method (JAX registers one, `jax._src.lib._xla_gc_callback`, and
many of TensorFlow's objects have them), the `KeyboardInterrupt` that the
default handler raises is printed as "Exception ignored in ..." and dropped,
and a run of many epochs goes on as if no Ctrl-C came: `python -m
training.train` ignored 1 of 6 Ctrl-Cs sent at the end of an epoch.

`remembered()` installs a handler that raises `KeyboardInterrupt` as
Python's default does and also notes the signal; `InterruptCheck`, a
callback, raises a noted signal that no one handled at the end of the
epoch it arrived in, and `raise_if_noted()` before an export or a preset is
moved into place. `fitting.fit` uses both, so every command and search
that trains stops, with its own one-line message: the dropped
`KeyboardInterrupt` is not printed, as it is not lost.
"""

import contextlib
import signal
import sys
import threading

import keras

from training.core import sigint


@contextlib.contextmanager
def remembered():
    """Within the block, a SIGINT raises `KeyboardInterrupt` and is noted.

    Only where Python's default handler (or a command's own,
    `training.core.sigint.note_and_raise`) is in place, in the main thread
    (the one signals reach): a handler the program installed stays as it is.
    A noted `KeyboardInterrupt` that Python drops is not printed
    (`sys.unraisablehook`). Under Python's default handler the note is
    cleared when the block ends, whatever ended it; under a command's it
    stays for the command's later checks.
    """
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous not in (
        signal.default_int_handler,
        sigint.note_and_raise,
    ):
        yield
        return
    own = previous is signal.default_int_handler
    if own:
        sigint.clear()
    printing = sys.unraisablehook
    sys.unraisablehook = sigint.quiet_dropped(printing)
    signal.signal(signal.SIGINT, sigint.note_and_raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = printing
        if own:
            sigint.clear()


def raise_if_noted():
    """Raises `KeyboardInterrupt` for a SIGINT noted in a `remembered()` block
    (one whose `KeyboardInterrupt` Python may have dropped): what a command
    calls before it moves a finished output into place, so an interrupted
    preset or export leaves none."""
    if sigint.noted():
        raise KeyboardInterrupt


class InterruptCheck(keras.callbacks.Callback):
    """Raises, at an epoch's end, a SIGINT whose `KeyboardInterrupt` was dropped.

    Checked at the end of every epoch only: a batch hook would take Keras's
    asynchronous batch callbacks away (on the backends that have them).
    """

    def on_epoch_end(self, epoch, logs=None):
        raise_if_noted()
