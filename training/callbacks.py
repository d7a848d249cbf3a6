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
