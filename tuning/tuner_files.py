"""Keras Tuner's state files, checked before the tuner reads them back.

A search resumes from what Keras Tuner wrote into its project folder (and
a record keeps a copy, `tuning.search_records.restore`): each trial's
`trial_*/trial.json`, the oracle's `oracle.json` and the tuner's
`tuner0.json`. Keras Tuner reads them without a check, so a damaged file
that is still JSON (`[]`, `{}`, a trial without its hyperparameters) was a
`TypeError` or a `KeyError` deep in the tuner. `check_state(folder)` checks
each against its schema here (`training.core.file_schema`, the project's
one mechanism for files read back), and the folder for symbolic links
(`training.runs.run_files.check_no_links`), before the tuner is made: a
bad file is one line naming the file, the field and what was expected.
"""

import json
from pathlib import Path

from training.core.file_schema import (
    ANY,
    Either,
    FileError,
    ListOf,
    Null,
    Number,
    Table,
    Text,
    check,
)
from training.runs import run_files

STATUSES = ("RUNNING", "IDLE", "INVALID", "STOPPED", "COMPLETED", "FAILED")
HYPERPARAMETERS = Table(
    {"space": ListOf(Table(others=ANY)), "values": Table(others=ANY)},
    required=("space", "values"),
)
OBSERVATION = Table(
    {"value": ListOf(Number()), "step": Number(0, integer=True)}, ("value", "step")
)
TRIAL = Table(
    {
        "trial_id": Text(),
        "hyperparameters": HYPERPARAMETERS,
        "metrics": Table(
            {
                "metrics": Table(
                    others=Table(
                        {
                            "direction": Text(("min", "max")),
                            "observations": ListOf(OBSERVATION),
                        },
                        ("direction", "observations"),
                    )
                )
            },
            ("metrics",),
        ),
        "score": Number(nullable=True),
        "best_step": Number(0, integer=True, nullable=True),
        "status": Text(STATUSES),
        "message": Text(nullable=True),
    },
    required=("trial_id", "hyperparameters", "metrics", "score", "status"),
)
ORACLE_FIELDS = {
    "ongoing_trials": Table(others=Text()),
    "hyperparameters": HYPERPARAMETERS,
    "start_order": ListOf(Text()),
    "end_order": ListOf(Text()),
    "run_times": Table(others=Number(0, integer=True)),
    "retry_queue": ListOf(Text()),
    "seed": Number(integer=True, nullable=True),
    "seed_state": Number(integer=True, nullable=True),
    "tried_so_far": ListOf(Text()),
    "id_to_hash": Table(others=Either(Text(), Null())),
    "display": Table(
        {
            "search_start": Either(Text(), Null()),
            "trial_start": Table(others=Text()),
            "trial_number": Table(others=Number(0, integer=True)),
        },
        ("search_start", "trial_start", "trial_number"),
    ),
}
# A Bayesian or Hyperband oracle keeps more (its settings, Hyperband's brackets).
ORACLE = Table(ORACLE_FIELDS, required=tuple(ORACLE_FIELDS), others=ANY)
TUNER = Table(others=ANY)


def _read(path, schema):
    try:
        content = json.loads(Path(path).read_text())
    except (ValueError, UnicodeDecodeError):
        raise FileError(
            f"{str(path)!r} is not valid JSON; expected the file Keras Tuner wrote "
            "(restore it, or --overwrite to search afresh)."
        ) from None
    return check(content, schema, path)


def check_state(folder):
    """Checks Keras Tuner's files in `folder` (a project or a record's state)
    before the tuner reads them; a one-line `ValueError` naming a bad one."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    run_files.check_no_links(folder, "tuner directory")
    trials = {}
    for path in sorted(folder.glob("trial_*/trial.json")):
        trials[_read(path, TRIAL)["trial_id"]] = path
    if (folder / "oracle.json").is_file():
        oracle = _read(folder / "oracle.json", ORACLE)
        for tuner_id, trial_id in oracle["ongoing_trials"].items():
            if trial_id not in trials:
                raise FileError(
                    f"{str(folder / 'oracle.json')!r}: ongoing_trials.{tuner_id} "
                    f"names trial {trial_id!r}, which has no trial.json; expected "
                    "the trials of the folder (restore it, or --overwrite)."
                )
    for path in sorted(folder.glob("tuner*.json")):
        _read(path, TUNER)
