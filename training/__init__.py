"""Training, evaluation, export and the commands around the zoo's models.

A package a floor, each importing only its own and those below: `data`,
`core`, `tasks`, `runs`, `reproduction`, `analysis`. The commands
(`python -m training.NAME`) stand at the top level, with `cli`, what they
share; docs/layout.md draws the tree and tests/layering_test.py holds it.
"""

from training.core import backends as _backends

# Before any submodule imports Keras: a missing backend package is one line.
_backends.require()
