"""Training callbacks: state resets for stateful models, temperature annealing."""

import keras

import zoo
from zoo.cells.second_order import second_order_cells
from zoo.checks import check_number


class ResetStatesEachEpoch(keras.callbacks.Callback):
    """Zeroes the recurrent state before each epoch and around each evaluation.

    For stateful models trained with truncated BPTT (`zoo.reset_states`).
    """

    def on_epoch_begin(self, epoch, logs=None):
        zoo.reset_states(self.model)

    def on_test_begin(self, logs=None):
        zoo.reset_states(self.model)

    def on_test_end(self, logs=None):
        zoo.reset_states(self.model)


class TemperatureAnnealing(keras.callbacks.Callback):
    """Anneals `tau` of every second-order cell at the end of each epoch.

    `tau <- max(tau * factor, minimum)` for each `SecondOrderLSTMCell` in the
    model, including cells inside `Bidirectional` and `StackedRNNCells` (the
    second-order LSTM report starts at `tau = 1` and multiplies by 0.9 per
    epoch). The first epoch runs at the cells' initial temperature. The new
    temperature (of the first cell) is logged as `temperature`.

    Args:
        factor: Number in (0, 1], the per-epoch multiplier. Default: 0.9.
        minimum: Positive number, the lowest temperature. Default: 0.1 (the
            report's "effectively one-hot").

    Example:

    >>> model.fit(x, y, epochs=20, callbacks=[TemperatureAnnealing(0.9, 0.1)])
    """

    def __init__(self, factor=0.9, minimum=0.1):
        check_number("factor", factor, low=0, high=1, low_open=True)
        check_number("minimum", minimum, low=0, low_open=True)
        super().__init__()
        self.factor = factor
        self.minimum = minimum

    def on_epoch_end(self, epoch, logs=None):
        temperatures = []
        for cell in second_order_cells(self.model):
            tau = float(keras.ops.convert_to_numpy(cell.temperature))
            tau = max(tau * self.factor, self.minimum)
            cell.temperature.assign(tau)
            temperatures.append(tau)
        if logs is not None and temperatures:
            logs["temperature"] = temperatures[0]


class StopBelowLoss(keras.callbacks.Callback):
    """Stops training once the monitored loss falls below a threshold.

    The multi-matrix report trains the Dyck-RNN "until the dev loss goes
    below 1e-5" (section 5.3); `train.stop_below_loss` sets it.

    Args:
        threshold: Positive number.
        monitor: The logged value to watch. Default: `"val_loss"`.
    """

    def __init__(self, threshold, monitor="val_loss"):
        check_number("threshold", threshold, low=0, low_open=True)
        super().__init__()
        self.threshold = threshold
        self.monitor = monitor

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is not None and value < self.threshold:
            self.model.stop_training = True
