"""Output folders are checked before any work starts (standard library only).

`check_out_dir(path, option)` refuses, in one line naming the option, a
path that is a file, lies inside a file, or where no folder can be made:
it makes and removes a scratch folder in the nearest existing one, since
`os.access` says yes to root even where nothing can be written (`/proc`).
Creates nothing that stays. Commands that do not load Keras use it too.
"""

import os
import tempfile
from pathlib import Path


def check_out_dir(path, option="--out"):
    """Returns `path` as a `Path` if a folder can be made there; creates nothing.

    A one-line `ValueError` (naming `option`) if `path` is a file, lies
    inside a file, or its nearest existing folder cannot be written.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(
            f"{option} {str(path)!r} is a file; expected a folder (new or existing)."
        )
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(
            f"{option} {str(path)!r} lies inside the file {str(existing)!r}; "
            "expected a folder."
        )
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".zoo-check-", dir=existing))
    except OSError as error:
        raise ValueError(
            f"{option} {str(path)!r} cannot be written ({str(existing)!r}: "
            f"{error.strerror or error}); expected a folder you can write."
        ) from None
    return path
