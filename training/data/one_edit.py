"""Hard recognition splits: every negative one edit from a positive.

Most of the paper's negatives (`training.data.recognition_sets`) are random
strings, and its hard ones keep a positive's symbols, so a rule with no stack
rejects many of them (REPRODUCTION.md's rule rows). A hard split holds fresh
positives of the language and as many negatives, each made by one edit of
one of those positives: a substitution of one symbol by another, an
insertion of a symbol, a deletion of one, or a swap of two adjacent
different symbols (Damerau's four single edits; the kind is drawn uniformly
for each try) and kept only when the exact recogniser (`is_member`) rejects
it, its length is in the split's range and it is not already in the split.
So the split is balanced 50/50 and every negative is a near miss.

`hard_splits` makes the two a recognition run evaluates (`RecognitionTask`):
"hard", the size and lengths of the paper's test split (56-102), and
"hard_long", those of its longest test (103-160), both times the recipe's
`task.split_scale`. Their lengths are above every training string (at most
55), so no training string can occur in them. They are drawn from their own
streams of the run's seed (`HARD_STREAM`), so the paper's splits stay as
they were, and the same seed gives the same strings.
"""

import numpy as np

from training.data.languages import alphabet, is_member
from training.data.recognition_sets import (
    MALI_SPLITS,
    RecognitionSplit,
    sample_positives,
)

EDITS = ("substitute", "insert", "delete", "swap")
# Which paper split each hard split copies its size and lengths from.
HARD_SPLITS = {"hard": "test", "hard_long": "long_160"}
# The hard splits' streams are SeedSequence(seed, spawn_key=(HARD_STREAM + i,)),
# apart from the paper splits' (`mali_splits` spawns keys 0-5).
HARD_STREAM = 41_000
# `task.negatives`: the paper's negatives in train and valid, or one-edit ones.
NEGATIVES = ("paper", "one_edit")
# The stream of `one_edit_training`'s draws, apart from the others.
TRAINING_STREAM = 42_000


def one_edit(string, edit, rng, symbols):
    """`string` after one edit of kind `edit` (one of `EDITS`), or None.

    The position and symbol are drawn from `rng`; a substitution or an
    insertion uses a symbol of `symbols`, a substitution always a different
    one; a swap exchanges two adjacent different symbols. None where the edit
    cannot be made (a deletion from or a swap in a string without the
    symbols for it).
    """
    string = list(string)
    if edit == "substitute":
        if not string:
            return None
        position = int(rng.integers(len(string)))
        others = [s for s in symbols if s != string[position]]
        string[position] = int(others[int(rng.integers(len(others)))])
    elif edit == "insert":
        position = int(rng.integers(len(string) + 1))
        string.insert(position, int(symbols[int(rng.integers(len(symbols)))]))
    elif edit == "delete":
        if not string:
            return None
        del string[int(rng.integers(len(string)))]
    elif edit == "swap":
        places = [i for i in range(len(string) - 1) if string[i] != string[i + 1]]
        if not places:
            return None
        i = places[int(rng.integers(len(places)))]
        string[i], string[i + 1] = string[i + 1], string[i]
    else:
        raise ValueError(
            f"edit must be one of {', '.join(map(repr, EDITS))}; received {edit!r}"
        )
    return string


def _shuffled(positives, negatives, min_length, max_length, rng):
    """A `RecognitionSplit` of `positives` and one-edit `negatives`, shuffled."""
    strings = positives + negatives
    labels = np.r_[np.ones(len(positives)), np.zeros(len(negatives))].astype(np.int32)
    order = rng.permutation(len(strings))
    return RecognitionSplit(
        strings=[strings[i] for i in order],
        labels=labels[order],
        is_hard=labels[order] == 0,
        min_length=min_length,
        max_length=max_length,
    )


def hard_split(language, size, min_length, max_length, *, p=0.5, p1=0.25, seed=0):
    """A balanced split of `size` strings whose negatives are one edit away.

    Args:
        language: 'D2', 'D3', 'D6' (any 'Dn') or 'palindrome'.
        size: number of strings (positives `size // 2`, negatives the rest).
        min_length, max_length: inclusive length range of every string.
        p, p1: the Dyck grammar's probabilities (`sample_positives`).
        seed: seed of `numpy.random.default_rng`, or a Generator.

    Returns:
        A `RecognitionSplit`, shuffled; `is_hard` marks the negatives.
    """
    if size < 2:
        raise ValueError(
            f"split size must be >= 2 (a positive and a negative); received {size}."
        )
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    positives = sample_positives(
        language, size // 2, min_length, max_length, p=p, p1=p1, seed=rng
    )
    negatives = one_edit_negatives(
        language, positives, size - size // 2, min_length, max_length, rng
    )
    return _shuffled(positives, negatives, min_length, max_length, rng)


def one_edit_negatives(
    language, positives, wanted, min_length, max_length, rng, exclude=()
):
    """`wanted` distinct negatives, each one edit from one of `positives`.

    The edit's kind is drawn uniformly from `EDITS` for each try; a string
    is kept when the exact recogniser rejects it, its length is in
    `[min_length, max_length]` and it is neither a positive nor in
    `exclude` (tuples). A one-line `ValueError` when too few are found.
    """
    symbols = alphabet(language)
    seen = {tuple(string) for string in positives} | set(exclude)
    negatives = []
    limit, tries = 10_000 + 1_000 * wanted, 0
    while len(negatives) < wanted:
        tries += 1
        if tries > limit:
            raise ValueError(
                f"{language} one-edit negatives in [{min_length}, {max_length}]: "
                f"only {len(negatives)} of {wanted} found in {limit} tries; "
                "expected more positives or a wider range"
            )
        source = positives[int(rng.integers(len(positives)))]
        string = one_edit(source, EDITS[int(rng.integers(len(EDITS)))], rng, symbols)
        if (
            string is None
            or not min_length <= len(string) <= max_length
            or tuple(string) in seen
            or is_member(string, language)
        ):
            continue
        seen.add(tuple(string))
        negatives.append(string)
    return negatives


def with_one_edit_negatives(split, language, rng, exclude=()):
    """`split` with its negatives replaced by one-edit negatives of its positives.

    The same positives, as many negatives as before, each one edit from a
    positive of the split (`one_edit_negatives`), none in `exclude`; the
    order shuffled by `rng`. For training on the hard tests' kind of
    negative (`task.negatives = "one_edit"`).
    """
    positives = [s for s, y in zip(split.strings, split.labels, strict=True) if y]
    negatives = one_edit_negatives(
        language,
        positives,
        len(split) - len(positives),
        split.min_length,
        split.max_length,
        rng,
        exclude,
    )
    return _shuffled(positives, negatives, split.min_length, split.max_length, rng)


def hard_splits(language, *, seed=0, scale=1.0, p=0.5, p1=0.25):
    """`{"hard": split, "hard_long": split}` of a run: see the module docstring."""
    table = MALI_SPLITS["D6" if language == "D6" else "small"]
    splits = {}
    for index, (name, paper) in enumerate(HARD_SPLITS.items()):
        size, low, high = table[paper]
        stream = np.random.SeedSequence(seed, spawn_key=(HARD_STREAM + index,))
        splits[name] = hard_split(
            language,
            max(2, int(round(size * scale))),
            low,
            high,
            p=p,
            p1=p1,
            seed=np.random.default_rng(stream),
        )
    return splits


def one_edit_training(splits, language, seed=0):
    """`splits` with one-edit negatives in "train" and "valid" (`task.negatives`).

    Each keeps its positives and its number of negatives; the new negatives
    are one edit from the split's own positives (`with_one_edit_negatives`),
    the training split's in no other split and the validation split's not
    in the training split. The test splits are unchanged. Drawn from their
    own stream of `seed` (`TRAINING_STREAM`).
    """
    rng = np.random.default_rng(
        np.random.SeedSequence(seed, spawn_key=(TRAINING_STREAM,))
    )
    others = {
        tuple(string)
        for name, split in splits.items()
        if name != "train"
        for string in split.strings
    }
    changed = dict(splits)
    changed["train"] = with_one_edit_negatives(
        splits["train"], language, rng, exclude=others
    )
    train_set = {tuple(string) for string in changed["train"].strings}
    changed["valid"] = with_one_edit_negatives(
        splits["valid"], language, rng, exclude=train_set
    )
    return changed
