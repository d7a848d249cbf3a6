"""The registry of recurrent cells: short lowercase names to cell classes."""

import functools
import inspect

import keras

_CELLS = {}


def register_cell(name):
    """Registers a cell class under `name` and as Keras-serializable `zoo>Class`.

    A registered name never changes: saved models and recipes refer to it.
    """

    def decorator(cls):
        if name in _CELLS:
            raise ValueError(f"Cell name {name!r} is already registered.")
        registered = keras.saving.register_keras_serializable(package="zoo")(cls)
        _CELLS[name] = registered
        return registered

    return decorator


def available_cells():
    """Returns the sorted names of every registered cell."""
    return sorted(_CELLS)


def get_cell_class(name):
    """Returns the class registered under `name`."""
    if name not in _CELLS:
        raise ValueError(
            f"Unknown cell {name!r}; expected one of: {', '.join(available_cells())}."
        )
    return _CELLS[name]


@functools.cache
def _parameters(function):
    """`function`'s signature's parameters, read once (a recipe's checks read
    its cell's for every recipe resolved: 3.5 s of a table report's 28)."""
    return inspect.signature(function).parameters


def cell_takes_vocab_size(cell_class):
    """Whether `cell_class`'s constructor takes `vocab_size` (e.g. `tensor_rnn`)."""
    return "vocab_size" in _parameters(cell_class.__init__)


def option_default(name, option):
    """The default of `option` in the constructor of the cell registered as
    `name`, or of the nearest class above it that names it; None where none
    does."""
    for cls in get_cell_class(name).__mro__:
        init = cls.__dict__.get("__init__")
        parameter = init and _parameters(init).get(option)
        if parameter:
            return parameter.default
    return None


def cell_options(name):
    """The sorted options the cell registered as `name` takes (beside `units`).

    Read from the constructor signatures of the cell's class and of every
    class above it up to `keras.Layer` (an option a subclass passes on in
    `**kwargs`, such as `ZooCell`'s initializers, included); a cell's own
    sequence layer (`MinGRU`: its `mode`) adds its own. `keras.Layer`'s and
    `keras.layers.RNN`'s own arguments
    (`name`, `dtype`, ...) are the model's to set, not a recipe's.
    """
    cell_class = get_cell_class(name)
    names = set()
    sequence_layer = getattr(cell_class, "sequence_layer", None)
    classes = [*cell_class.__mro__, *(sequence_layer or object).__mro__]
    rnn_arguments = _parameters(keras.layers.RNN.__init__)
    for cls in classes:
        if cls is keras.Layer or not issubclass(cls, keras.Layer):
            continue
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        for parameter in list(_parameters(init).values())[1:]:
            if parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
                names.add(parameter.name)
    return sorted(names - {"units", *rnn_arguments})


def get_cell(name, units, **options):
    """Builds the cell registered under `name` with `units` and its options.

    Example:

    >>> cell = get_cell("mlstm", 128, forget_bias=3.0)
    >>> layer = keras.layers.RNN(cell, return_sequences=True)
    """
    return get_cell_class(name)(units, **options)


# The baselines are Keras's own cells, registered under short names.
_CELLS["rnn"] = keras.layers.SimpleRNNCell
_CELLS["lstm"] = keras.layers.LSTMCell
_CELLS["gru"] = keras.layers.GRUCell
