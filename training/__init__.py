"""Training, evaluation, export and the CLIs around the zoo's models."""

from training.core import backends as _backends

# Before any submodule imports Keras: a missing backend package is one line.
_backends.require()
