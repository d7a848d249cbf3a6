"""Walking a model's layers, nested ones included."""


def walk_layers(model, include_self=False):
    """Yields every layer Keras tracks inside `model`, recursively.

    Finds cells inside `keras.layers.RNN`, `Bidirectional` and
    `StackedRNNCells`, and the layers of nested models; `model` itself comes
    first when `include_self`.
    """
    yield from model._flatten_layers(include_self=include_self, recursive=True)
