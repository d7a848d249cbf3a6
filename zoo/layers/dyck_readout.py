"""The Dyck-RNN's readout: the top of the stack to the closing-bracket type."""

import keras
from keras import ops

from zoo.checks import check_positive_int


@keras.saving.register_keras_serializable(package="zoo")
class DyckReadout(keras.Layer):
    """Affine map of the stack's top element with a softmax over `k` closings.

    The multi-matrix report's Dyck-RNN (section 4.2) reads the top of its
    stack, the first `embedding_dim` entries of the hidden state, and predicts
    the closing bracket: `softmax(W top + b)`, one probability per bracket type.

    Args:
        num_bracket_types: Positive integer `k`.
        embedding_dim: Positive integer, the width of a stack slot (the
            Dyck-RNN cell's `embedding_dim`). Default: 1.
        kernel_initializer: Initializer of `W` (`(embedding_dim, k)`).
        bias_initializer: Initializer of `b`.

    Example:

    >>> DyckReadout(2)(np.zeros((3, 5, 4), "float32")).shape
    (3, 5, 2)
    """

    def __init__(
        self,
        num_bracket_types,
        embedding_dim=1,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        check_positive_int("num_bracket_types", num_bracket_types)
        check_positive_int("embedding_dim", embedding_dim)
        super().__init__(**kwargs)
        self.num_bracket_types = num_bracket_types
        self.embedding_dim = embedding_dim
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        if input_shape[-1] is None or input_shape[-1] < self.embedding_dim:
            raise ValueError(
                "DyckReadout expects `inputs` with at least `embedding_dim` = "
                f"{self.embedding_dim} features; received shape {tuple(input_shape)}."
            )
        self.kernel = self.add_weight(
            shape=(self.embedding_dim, self.num_bracket_types),
            initializer=self.kernel_initializer,
            name="kernel",
        )
        self.bias = self.add_weight(
            shape=(self.num_bracket_types,),
            initializer=self.bias_initializer,
            name="bias",
        )

    def call(self, inputs):
        top = inputs[..., : self.embedding_dim]  # [..., embedding_dim]
        logits = ops.matmul(top, self.kernel) + self.bias  # [..., k]
        return ops.softmax(logits, axis=-1)

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.num_bracket_types)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_bracket_types": self.num_bracket_types,
                "embedding_dim": self.embedding_dim,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
