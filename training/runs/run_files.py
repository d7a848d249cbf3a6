"""What a run directory's files are: the project's by record, and no links.

**Ownership by record.** A run directory keeps a manifest, `MANIFEST`
(`.run_files.json`): the names, directly inside it, of the files and
folders the project's commands wrote there. Each command records a name
before it writes it (`record`, `claim`), so a name is listed from the
moment its file can exist. A re-run removes or replaces only listed names,
and a run directory holding anything else is refused in one line naming it
(`foreign`, used by `training.runs.run_dirs.check_owned`): a file of yours
named `evaluation-by-hand.json` or `syntax-notes.txt` is never taken for a
result, whatever its name. Only temporaries named by a process id and a
random suffix (`NAME.partial-PID-RANDOM`, `NAME.replaced-PID-RANDOM`,
`best.partial.keras`, `NAME.damaged`) are recognised by their name; they
are never removed by a re-run either.

**A folder without a manifest** owns nothing: a new one, or a folder of
yours (training there is refused, as it holds files no command wrote). One
that holds `recipe.json` is a run directory of an earlier version (a
`runs/` folder trained before the manifest): every command refuses it in
one line naming `python -m training.migrate RUN_DIR`, which writes the
manifest of the names that version wrote under fixed names
(`training.reproduction.format_migration`).
The committed `results/` records and `zoo/presets/` are not run
directories: training refuses them, and nothing writes a manifest into
them.

**No links.** The project never makes a symbolic link inside a run
directory, an export target or a tuner's project folder, so it follows
none it finds there (`check_no_links`): a planted `backup` or `attempt`
link would send the weights, or a whole re-run, to where the link points.
It is refused in one line naming the link.
"""

import contextlib
import fcntl
import json
import os
import re
from pathlib import Path

from training.core.callbacks import write_atomically

MANIFEST = ".run_files.json"
RECIPE = "recipe.json"  # what marks a folder as a run directory
# Temporaries, named by a process id and a random suffix (`write_atomically`,
# `scratch_beside`, `replace_folder`), `AtomicModelCheckpoint`'s and the
# table runner's damaged files set aside.
TEMPORARY = re.compile(
    r"[^/]+\.(partial|replaced)-[0-9]+-[0-9A-Za-z_]+|best\.partial\.keras|[^/]+\.damaged"
)


class LinkError(ValueError):
    """A symbolic link where the project makes none; the message is one line."""


def check_no_links(folder, kind="run directory"):
    """A one-line `LinkError` naming the first symbolic link in `folder`.

    Looks at every file and folder under `folder` (never into a link); the
    folder itself may be a link (the path you gave). Reads only.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return
    for root, folders, names in os.walk(folder):
        for name in sorted(folders + names):
            path = Path(root) / name
            if path.is_symlink():
                raise LinkError(
                    f"{str(path)!r} is a symbolic link (to {os.readlink(path)!r}) "
                    f"inside the {kind} {str(folder)!r}; expected only files and "
                    "folders the project wrote (it never follows a link it did not "
                    "make: remove the link)."
                )


def check_target(path, kind):
    """A one-line `LinkError` when the folder a command replaces, `path` (an
    export or preset target), is a symbolic link or holds one."""
    path = Path(path)
    if path.is_symlink():
        raise LinkError(
            f"The {kind} {str(path)!r} is a symbolic link (to "
            f"{os.readlink(path)!r}); expected a folder (the project never "
            "replaces a link or writes through one: give the folder's own path)."
        )
    check_no_links(path, kind)


def is_temporary(name):
    return TEMPORARY.fullmatch(name) is not None


def _read(path):
    """The names listed in the manifest at `path`; a one-line `ValueError`."""
    try:
        content = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        content = None
    names = content.get("files") if isinstance(content, dict) else None
    if not (
        isinstance(names, list)
        and all(
            isinstance(name, str) and name not in ("", ".", "..") and "/" not in name
            for name in names
        )
    ):
        raise ValueError(
            f"{str(path)!r} is not a run directory's manifest; expected "
            '{"files": [names of files in the folder]} as the project writes it '
            "(move the folder away and train into a new --run-dir)."
        )
    return set(names)


def owned(run_dir):
    """The names the project wrote into `run_dir`: its manifest's, or none
    in a folder without one (a new one, or yours); a one-line `ValueError`
    for a run directory of an earlier version (`recipe.json`, no manifest)."""
    run_dir = Path(run_dir)
    path = run_dir / MANIFEST
    if path.is_symlink():
        check_no_links(run_dir)
    if path.is_file():
        return _read(path)
    if (run_dir / RECIPE).is_file():
        raise ValueError(
            f"Run directory {str(run_dir)!r} names no files it owns (it holds "
            f"{RECIPE} but no {MANIFEST}: a run directory of an earlier version); "
            f"expected its manifest: python -m training.migrate {str(run_dir)!r} "
            "brings it up to date."
        )
    return set()


def foreign(run_dir):
    """The names in `run_dir` the project did not write there, sorted."""
    run_dir = Path(run_dir)
    names = owned(run_dir)
    return sorted(
        path.name
        for path in run_dir.iterdir()
        if path.name != MANIFEST
        and path.name not in names
        and not is_temporary(path.name)
    )


@contextlib.contextmanager
def _locked(run_dir):
    """The manifest's read-change-write, one process at a time (a `flock` on
    the folder itself, which needs no file of its own)."""
    descriptor = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _change(run_dir, add=(), drop=()):
    run_dir = Path(run_dir)
    with _locked(run_dir):
        names = owned(run_dir)
        changed = (names | set(add)) - set(drop)
        if changed != names or not (run_dir / MANIFEST).is_file():
            _write(run_dir, changed)


def _write(run_dir, names):
    text = json.dumps({"files": sorted(names)}, indent=2) + "\n"
    write_atomically(Path(run_dir) / MANIFEST, text)


def record(run_dir, *names):
    """Adds `names` to the manifest of the existing folder `run_dir` (writing
    one where a new folder has none), before they are written."""
    _change(run_dir, add=names)


def adopt(run_dir, names):
    """Writes the manifest, listing `names`, of a run directory of an earlier
    version that has none (`python -m training.migrate`); True if written."""
    run_dir = Path(run_dir)
    with _locked(run_dir):
        if (run_dir / MANIFEST).exists():
            return False
        _write(run_dir, names)
        return True


def forget(run_dir, *names):
    """Takes `names` off the manifest of `run_dir` (they were removed)."""
    _change(run_dir, drop=names)


def in_run_directory(path):
    """Whether `path`'s folder is a run directory (it holds `recipe.json`)
    and not a preset (`card.json`), which is read-only."""
    folder = Path(path).parent
    return (folder / RECIPE).is_file() and not (folder / "card.json").exists()


def check_claim(path, command):
    """A one-line `ValueError` when something the project did not write is at
    `path` in a run directory, which `command` would write (it may be yours:
    it is never replaced). Reads only: what a command checks before its work."""
    path = Path(path)
    folder = path.parent
    check_no_links(folder)
    if path.exists() and path.name not in owned(folder):
        raise ValueError(
            f"{str(path)!r} is not a file {command} wrote (the run directory's "
            f"{MANIFEST} does not list it); expected no such file: move it away, "
            "as it is never replaced."
        )


def claim(path, command):
    """`check_claim`, then records `path`'s name in its folder's manifest:
    what a command calls just before it writes `path`."""
    check_claim(path, command)
    record(Path(path).parent, Path(path).name)
