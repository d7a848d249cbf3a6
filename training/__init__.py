"""Training, evaluation, export and the commands around the zoo's models.

A package a floor, each importing only its own and those below: `data`,
`core`, `tasks`, `runs`, `reproduction`, `analysis`. The commands
(`python -m training.NAME`) stand at the top level, with `cli`, what they
share; docs/layout.md draws the tree and tests/layering_test.py holds it.
"""

import sys as _sys

if _sys.argv[:1] == ["-m"]:  # a `python -m training.NAME` or `tuning.NAME` starts
    # A Ctrl-C while its modules load is noted, not raised (`signal` itself
    # takes a while to import): `training.cli.command_line.run` raises it once
    # the command runs, as one line.
    import _signal

    def _note(signum, frame):
        _note.noted.append(signum)

    _note.noted = []
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _note)

from training.core import backends as _backends  # noqa: E402

# Before any submodule imports Keras: a missing backend package is one line.
_backends.require()
