"""Masked pooling over time: a sequence of states to one vector per sequence."""

import keras
from keras import ops

from zoo.checks import check_choice

POOLING_MODES = ("mean", "max")


@keras.saving.register_keras_serializable(package="zoo")
class SequencePooling(keras.Layer):
    """The mean or the maximum of a sequence's states over its unmasked steps.

    A text classifier reads one vector per sequence (the lecture's
    "Application: Text Classification"); besides the last state it may pool
    every state: `"mean"` averages them, `"max"` takes each feature's maximum
    over time. Padded steps (mask 0) are left out of both: a sequence's pooled
    vector is that of the sequence without its padding. A row with no unmasked
    step pools to zeros. Keras's `GlobalMaxPooling1D` ignores a mask, hence
    this layer.

    Args:
        mode: `"mean"` or `"max"`.

    Example:

    >>> pooling = SequencePooling("max")
    >>> pooling(np.zeros((3, 5, 4), "float32"), mask=np.ones((3, 5), bool)).shape
    (3, 4)
    """

    def __init__(self, mode, **kwargs):
        check_choice("mode", mode, POOLING_MODES)
        super().__init__(**kwargs)
        self.mode = mode
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(
                "SequencePooling expects `inputs` of shape (batch, time, features); "
                f"received {tuple(input_shape)}."
            )

    def call(self, inputs, mask=None):
        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], "bool")  # [batch, time]
        present = ops.cast(mask, "bool")[:, :, None]  # [batch, time, 1]
        if self.mode == "mean":
            total = ops.sum(ops.where(present, inputs, 0.0), axis=1)  # [batch, f]
            count = ops.sum(ops.cast(present, inputs.dtype), axis=1)  # [batch, 1]
            return total / ops.maximum(count, 1.0)  # [batch, features]
        # A padded step takes the smallest value of the batch: never a maximum
        # over a row's unmasked steps (and finite in every float dtype).
        lowest = ops.stop_gradient(ops.min(inputs))
        largest = ops.max(ops.where(present, inputs, lowest), axis=1)  # [batch, f]
        seen = ops.any(present, axis=1)  # [batch, 1]
        return ops.where(seen, largest, 0.0)  # [batch, features]

    def compute_mask(self, inputs, mask=None):
        return None  # one vector per sequence: no time axis left to mask

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}
