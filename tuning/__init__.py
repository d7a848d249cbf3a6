"""Keras Tuner searches of the zoo's cells: hypermodels, tuners, records, protocols."""

import sys as _sys

if _sys.argv[:1] == ["-m"]:  # a `python -m tuning.NAME` command is starting
    import training  # noqa: F401 (it defers a Ctrl-C while the modules load)

__all__ = ["CELL_OPTION_CHOICES", "RecurrentHyperModel", "cell_options"]


def __getattr__(name):
    # Imported when first asked for: `python -m tuning.protocol`, which runs
    # each search in a process of its own, never loads TensorFlow itself.
    if name in __all__:
        from tuning import hypermodels

        return getattr(hypermodels, name)
    raise AttributeError(f"module 'tuning' has no attribute {name!r}")
