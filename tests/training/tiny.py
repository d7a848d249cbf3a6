"""Tiny recipes of every task kind, for tests that train (seconds each)."""

from training import recipes, runs

# A tiny run trains a few steps: XLA's compile (seconds) would cost more than
# it saves, so tiny recipes run in the graph unless a test asks for XLA
# (`extra=["train.jit_compile=auto"]`); tests/training/compile_mode_test.py
# and the kill-and-resume test train compiled.
NO_XLA = "train.jit_compile=false"

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
}
TEXT = "the cat sat on the mat\nthe dog sat on the log\n" * 200


def tiny_recipe(kind, text_file=None, extra=()):
    """The tiny recipe of `kind`; a language model reads `text_file`."""
    overrides = [*TINY[kind], *extra]
    if kind == "language_model":
        overrides.append(f"task.corpus=file:{text_file}")
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
