"""The one note of a Ctrl-C (SIGINT) a command keeps (standard library only).

Python raises a signal's `KeyboardInterrupt` in whatever Python code runs
when it arrives; in a garbage collector's callback or a `__del__` method
(JAX's `_xla_gc_callback`, TensorFlow's objects) it is printed as
"Exception ignored in ..." and dropped, and the command goes on. A command
(`training.cli.command_line.run`) therefore installs `note_and_raise` for
its whole run: it raises as Python's handler does and notes the signal, so
the places that must not miss one (the end of each training epoch, the
moment before an export or a preset is moved into place:
`training.core.interrupts`) raise a noted one that was dropped, and
`install` keeps the dropped one from being printed. `handling` sets a
handler for a block, for a process that passes its signals on (`STOPS`) to
the processes it started.
"""

import contextlib
import signal
import sys
import threading

# What a process that starts others (the table runner, the protocol driver)
# passes on to them.
STOPS = (signal.SIGINT, signal.SIGTERM)

_noted = threading.Event()


def note_and_raise(signum, frame):
    _noted.set()
    raise KeyboardInterrupt


def noted():
    """Whether a SIGINT was noted (and not cleared)."""
    return _noted.is_set()


def clear():
    _noted.clear()


def note():
    _noted.set()


def quiet_dropped(printing):
    """An unraisable hook that prints what `printing` prints, but a noted
    `KeyboardInterrupt` Python dropped (it is not lost: it was noted)."""

    def unraisable(event):
        if event.exc_type is not KeyboardInterrupt or not _noted.is_set():
            printing(event)

    unraisable.printing = printing
    return unraisable


def install():
    """`note_and_raise` for SIGINT and `quiet_dropped` for the process (a
    command's main thread, at its start)."""
    import signal

    signal.signal(signal.SIGINT, note_and_raise)
    if getattr(sys.unraisablehook, "printing", None) is None:
        sys.unraisablehook = quiet_dropped(sys.unraisablehook)


@contextlib.contextmanager
def handling(signals, handler):
    """`handler` for each of `signals` within the block, in the main thread
    (the one signals reach; elsewhere nothing changes). A handler, unlike
    SIG_IGN, is reset to the default in a child that starts a program."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in signals}
    try:
        for number in signals:
            signal.signal(number, handler)
        yield
    finally:
        for number, handling_before in previous.items():
            signal.signal(number, handling_before)
