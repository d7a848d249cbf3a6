"""Walking a model's layers, nested ones included."""

from zoo import keras_compat


def walk_layers(model, include_self=False):
    """Yields every layer Keras tracks inside `model`, recursively.

    Finds cells inside `keras.layers.RNN`, `Bidirectional` and
    `StackedRNNCells`, and the layers of nested models; `model` itself comes
    first when `include_self`.
    """
    yield from keras_compat.flatten_layers(model, include_self=include_self)
