import signal
import sys

import keras
import pytest

from tests.training.tiny import tiny_recipe
from training.core import fitting, interrupts, sigint
from training.tasks import make_task


class Dropper:
    """Sends this process a SIGINT from `__del__`, where Python drops the
    `KeyboardInterrupt` its handler raises ("Exception ignored in ...")."""

    def __del__(self):
        signal.raise_signal(signal.SIGINT)  # its handler runs before this returns


class CtrlCInFirstEpoch(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 0:
            Dropper()  # deleted at once


@pytest.fixture
def default_handler(monkeypatch):
    """Python's own SIGINT handler; the exceptions Python drops and prints."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)
    yield dropped
    signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_python_dropped_stops_training_at_the_epochs_end(default_handler):
    task = make_task(tiny_recipe("dyck", extra=["train.epochs=3"]))
    model = task.build_model()
    history = keras.callbacks.History()
    with pytest.raises(KeyboardInterrupt):
        fitting.fit(model, task, callbacks=[CtrlCInFirstEpoch(), history])
    # Python dropped it at the first epoch's beginning (not printed: it was
    # not lost), and training stopped at that epoch's end, of 3
    assert history.epoch == [0]
    assert default_handler == []
    # Python's handler is back, and no Ctrl-C is left noted
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not sigint.noted()


def test_a_handler_the_program_installed_stays():
    def own(signum, frame):
        pass

    previous = signal.signal(signal.SIGINT, own)
    try:
        with interrupts.remembered():
            assert signal.getsignal(signal.SIGINT) is own
    finally:
        signal.signal(signal.SIGINT, previous)


def test_what_python_drops_for_good_is_still_printed(default_handler):
    class Broken:
        def __del__(self):
            raise ValueError("not an interrupt")

    with interrupts.remembered():
        Broken()
    assert [event.exc_type for event in default_handler] == [ValueError]
