"""What the analysis CLIs read from a loaded run's task and vocabulary.

The run itself is loaded with `training.runs.runs.load_run`; these helpers check
its kind and split, and read a split's or a text's token ids.
"""

from pathlib import Path

import numpy as np

from training.core import plots


def check_kind(recipe, kinds, what, run_dir):
    kind = recipe.task.kind
    if kind not in kinds:
        raise ValueError(
            f"{what} needs a run of task kind {' or '.join(kinds)}; {run_dir} is a "
            f"{kind!r} run."
        )


def check_split(task, split):
    if split not in task.splits:
        raise ValueError(
            f"Unknown split {split!r} for this task; expected one of: "
            f"{', '.join(task.splits)}."
        )


def stream_ids(task, split):
    """The token ids of a language-model run's split."""
    check_split(task, split)
    return task.encoded[split].ids


def sample_ids(task, split, count):
    """The first `count` strings of a split, each as ids read from its start."""
    check_split(task, split)
    if task.recipe.task.kind == "language_model":
        ids, eos = stream_ids(task, split), task.vocabulary.eos_id
        if eos is None:
            return [ids[i : i + 60] for i in range(0, 60 * count, 60)][:count]
        ends = np.flatnonzero(ids == eos)
        lines = [ids[a + 1 : b] for a, b in zip(ends[:-1], ends[1:], strict=True)]
        return [np.concatenate([[eos], line]) for line in lines if len(line)][:count]
    arrays = task.arrays[split]
    return [row[row != 0] for row in arrays.inputs[:count]]


def encode_texts(task, texts):
    """`--text` strings as ids, read after the run's start token.

    Each is natural text, written in the conventions of the run's vocabulary
    (`Task.tokenizer`); a token the vocabulary lacks is a one-line
    `ValueError` naming it.
    """
    start = [] if task.start_id is None else [task.start_id]
    return [np.array(start + ids, "int32") for ids in task.tokenizer()(list(texts))]


def token_names(vocabulary, ids):
    return [vocabulary.decode([int(i)]) for i in ids]


def run_names(run_dirs):
    """Short names that tell the runs apart, for labels and file names.

    The folder's name, with as many parent folders as it takes to make the
    names differ (`lstm_m4-seed-0`, `lstm_m6-seed-0` for the runner's
    `OUT/runs/ROW/seed-N`), so no run's picture or numbers replace another's;
    they differ as file names too (`plots.file_name`, `preset:NAME`).
    """
    parts = [Path(d).resolve().parts for d in run_dirs]
    if len(set(parts)) < len(parts):
        raise ValueError("a run directory is given twice; expected each once.")
    depth = 1
    while len({plots.file_name("-".join(p[-depth:])) for p in parts}) < len(parts):
        if depth == max(map(len, parts)):
            raise ValueError(
                "two run directories' paths differ only in characters a file "
                "name cannot hold (such as ':'); expected names that differ in "
                "letters, digits, '_', '.' or '-'."
            )
        depth += 1
    return ["-".join(p[-depth:]) for p in parts]


def run_label(name, recipe):
    return f"{recipe.model.cell} ({name})"
