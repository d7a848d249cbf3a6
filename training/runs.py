"""Run directories: what a training run leaves behind, and reading it back.

A run directory holds `recipe.json` (the resolved recipe, seed included),
`vocabulary.json`, `best.keras` (the best model by validation loss),
`backup/` (`BackupAndRestore`, while training), `log.csv`, `tensorboard/`,
`metrics.json` and, after export, `saved_model/`.
"""

import json
from pathlib import Path

from training.data.tokenize import Vocabulary

RECIPE, VOCABULARY, BEST, METRICS = (
    "recipe.json",
    "vocabulary.json",
    "best.keras",
    "metrics.json",
)


class RunError(ValueError):
    """A run directory is missing or incomplete; the message is one line."""


def write_json(path, value):
    Path(path).write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")


def read_json(path):
    return json.loads(Path(path).read_text())


def check_run(run_dir, needs=(RECIPE, VOCABULARY, BEST)):
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunError(f"Run directory {str(run_dir)!r} does not exist.")
    for name in needs:
        if not (run_dir / name).exists():
            raise RunError(
                f"Run directory {str(run_dir)!r} has no {name}; expected a "
                "directory written by python -m training.train."
            )
    return run_dir


def load_run(run_dir):
    """Returns `(recipe, vocabulary, task, model)` of a finished run.

    The model is rebuilt from the recipe (stateless) and given the best
    weights, so it works at any batch size.
    """
    from training.tasks import make_task

    run_dir = check_run(run_dir)
    recipe = read_json(run_dir / RECIPE)
    vocabulary = Vocabulary.from_json((run_dir / VOCABULARY).read_text())
    task = make_task(recipe, vocabulary=vocabulary)
    model = task.build_model(stateful=False)
    model.load_weights(run_dir / BEST)
    return recipe, vocabulary, task, model
