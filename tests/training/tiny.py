"""Tiny recipes of every task kind, for tests that train (seconds each)."""

import json
import tempfile
from pathlib import Path

from training.runs import runs
from training.tasks import recipes

# A tiny run trains a few steps: XLA's compile (seconds) would cost more than
# it saves, so tiny recipes run in the graph unless a test asks for XLA
# (`extra=["train.jit_compile=auto"]`); tests/training/core/compile_mode_test.py
# and the kill-and-resume test train compiled.
NO_XLA = "train.jit_compile=false"
# The tiny recognizer with an LSTM for its stack cell, for tests of the fit
# path under XLA, where the cell is not what is tested: its step compiles in
# a fraction of the differentiable stack's time.
LSTM_RECOGNIZER = ["model.cell=lstm", "model.options={}"]

TINY = {
    "dyck": [
        "task.train_sequences=48",
        "task.dev_sequences=16",
        "task.test_sequences=16",
        "model.units=8",
        "model.embedding_dim=8",
        "train.epochs=2",
        "train.batch_size=16",
        NO_XLA,
    ],
    "closing_bracket": [
        "task.train_sequences=48",
        "task.dev_sequences=16",
        "task.test_sequences=16",
        "train.epochs=2",
        NO_XLA,
    ],
    "recognition": [
        "task.split_scale=0.01",
        "model.units=4",
        "model.embedding_dim=4",
        "model.options.stack_depth=8",
        "train.epochs=2",
        NO_XLA,
    ],
    "dyck_depth": [
        "task.train_sequences=48",
        "task.dev_sequences=16",
        "task.test_sequences=16",
        "model.units=8",
        "model.embedding_dim=8",
        "model.bidirectional=true",
        "train.epochs=2",
        "train.batch_size=16",
        NO_XLA,
    ],
    "acceptability": [
        "task.pairs_per_suite=8",
        "model.units=8",
        "model.embedding_dim=8",
        "train.epochs=2",
        "train.batch_size=8",
        NO_XLA,
    ],
    "language_model": [
        "model.units=8",
        "model.embedding_dim=8",
        "task.sequence_length=10",
        "train.epochs=2",
        "train.batch_size=4",
        NO_XLA,
    ],
}
RECIPE_OF = {
    "dyck": "dyck2_mlstm",
    "closing_bracket": "dyck2_dyck_rnn",
    "recognition": "recognition_d2_diffstk_rnn",
    "language_model": "ptb_word_lstm",
    "dyck_depth": "dyck_depth_lstm",
    "acceptability": "blimp_acceptability_lstm",
}
TEXT = "the cat sat on the mat\nthe dog sat on the log\n" * 200


NOUNS = ("cat", "dog", "bird", "horse")
# Phenomenon -> suite -> (good, bad) templates; a phenomenon of two suites
# has no validation suite.
SUITES = {
    "agreement": {
        f"agreement_{i}": ("The {a} {verb}s the {b}.", "The {a} {verb} the {b}.")
        for i in (1, 2, 3)
    },
    "anaphora": {
        f"anaphora_{i}": ("The {a} {verb}s itself.", "The {a} {verb}s themselves.")
        for i in (1, 2, 3)
    },
    "ellipsis": {
        f"ellipsis_{i}": ("The {a} can't {verb}, but the {b} can.", "The {a} can.")
        for i in (1, 2)
    },
}


# Two recognition rows of two languages at a tiny split scale (the rule rows'
# tests: `training.reproduction.table_baselines`).
TINY_RECOGNITION = """
title = "Tiny recognition"
seeds = 1

[[metric]]
key = "test.strict"
label = "test, strict (%)"
factor = 100.0

[[metric]]
key = "hard.strict"
label = "hard test, strict (%)"
factor = 100.0

[[row]]
name = "lstm"
recipe = "recognition_d2_diffstk_rnn"
overrides = ["model.cell=lstm", "model.options={}", "task.split_scale=0.005"]

[[row]]
name = "palindrome_lstm"
recipe = "recognition_palindrome_diffstk_rnn"
overrides = ["model.cell=lstm", "model.options={}", "task.split_scale=0.005"]
"""


def write_suites(folder, pairs=8):
    """Writes BLiMP-like suites into `folder/blimp/`; returns `folder`.

    8 suites of three phenomena, `pairs` pairs each: `split_suites` holds
    out 3 for the test and 2 for validation.
    """
    suites = Path(folder) / "blimp"
    suites.mkdir(parents=True, exist_ok=True)
    for term, templates in SUITES.items():
        for index, (name, (good, bad)) in enumerate(templates.items()):
            lines = []
            for i in range(pairs):
                words = {
                    "a": NOUNS[i % 4],
                    "b": NOUNS[(i + 1 + index) % 4],
                    "verb": ("see", "chase", "like")[(i + index) % 3],
                }
                record = {
                    "sentence_good": good.format(**words),
                    "sentence_bad": bad.format(**words),
                    "linguistics_term": term,
                    "UID": name,
                }
                lines.append(json.dumps(record))
            (suites / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    return Path(folder)


def tiny_recipe(kind, text_file=None, extra=()):
    """The tiny recipe of `kind`; a language model reads `text_file`.

    The acceptability task reads suites `write_suites` writes beside
    `text_file` (or in a new temporary folder).
    """
    overrides = [*TINY[kind], *extra]
    if kind == "language_model":
        overrides.append(f"task.corpus=file:{text_file}")
    if kind == "acceptability":
        folder = Path(text_file).parent if text_file else Path(tempfile.mkdtemp())
        overrides.insert(0, f"task.data_dir={write_suites(folder)}")
    return recipes.resolve(RECIPE_OF[kind], "small", overrides)


def train_text_run(folder, extra=()):
    """Trains the tiny language model on `TEXT` in `folder`; returns its run."""
    corpus = folder / "corpus.txt"
    corpus.write_text(TEXT)
    run_dir = folder / "run"
    runs.train_run(tiny_recipe("language_model", corpus, extra), run_dir)
    return run_dir


# A two-row reproduction table of `tiny_dyck_lstm`, for the table tests.
TINY_TABLE = """
title = "Tiny table"
source = "not a paper: two rows of the seconds-long tiny_dyck_lstm recipe"
seeds = 2

[[metric]]
key = "test.wcpa"
label = "test WCPA (%)"
factor = 100.0
better = "higher"

[[metric]]
key = "test.cross_entropy"
label = "test cross-entropy"
better = "lower"

[[row]]
name = "small"
recipe = "tiny_dyck_lstm"
paper = { "test.wcpa" = { mean = 50.0, best = 60.0 } }

[[row]]
name = "wide"
recipe = "tiny_dyck_lstm"
overrides = ["model.units=12"]

[[claim]]
text = "wide has lower cross-entropy than small"
metric = "test.cross_entropy"
better = "wide"
worse = "small"
"""
