"""Dyck-n and palindrome recognition sets (Mali et al., 2020, section 5).

Positive strings of Dyck-n come from the PCFG of eq. 28, generalised to n
bracket types: S -> (_i S )_i with probability p/n for each type i, S -> S S
with probability p1, S -> epsilon with probability 1 - (p + p1). The palindrome
language is w c w^R over {a, b} with the centre marker c; |w| is uniform over
the lengths that fit the split and w is uniform. Strings are drawn until one
falls in the split's length range (rejection, so the length distribution is the
grammar's, conditioned on the range).

Negatives are half of every split (positives `size // 2`, negatives the rest).
Random negatives are uniform strings over the alphabet with lengths drawn from
the split's positives; hard negatives are positives with 1 or 3 swaps of two
different symbols (the paper's "swap around 1 or 3 characters"; same length,
same symbols), or, with `hard_negatives="edit"`, 1 to 3 edits (swap,
insertion or deletion of one symbol). A fraction drawn uniformly from
[0.15, 0.30] of the negatives is hard, replacing random ones.
Every string is checked by the exact recogniser (`is_member`), so no negative is
accidentally valid; strings of the training split never occur in the other
splits.

The languages themselves (alphabets, token ids, the exact recogniser, prefix
membership and legal next symbols) are in `training.data.languages`.

Per-step labels (for the hybrid loss of Mali et al.'s eq. 1): after reading
START and the first j symbols, the label is 1 when the prefix x_1 .. x_j is a
complete string of the language and 0 otherwise. The paper writes the MSE term
with the string label y at every step; a causal model cannot know at step j
whether the unseen suffix will make the string valid, so the target it can meet
exactly is the prefix's membership. At the last step the prefix is the whole
string, so this label equals the string label y there, and that last step is
where the string is classified (`metrics.recognition_accuracy`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from training.data.dyck_strings import END_ID, FIRST_BRACKET_ID, PAD_ID, START_ID
from training.data.languages import (
    PALINDROME_MARKER,
    alphabet,
    bracket_types,
    frame_rows,
    is_member,
)
from training.data.pcfg_strings import PcfgStrings


def _feasible_lengths(language, min_length, max_length):
    parity = 1 if bracket_types(language) is None else 0
    lengths = [n for n in range(max(min_length, 0), max_length + 1) if n % 2 == parity]
    if language == "palindrome":
        lengths = [n for n in lengths if n >= 1]
    if not lengths:
        kind = "odd" if parity else "even"
        raise ValueError(
            f"length range [{min_length}, {max_length}] holds no {language} string; "
            f"expected a range containing an {kind} length"
        )
    return lengths


def _sample_palindrome(rng, lengths):
    length = int(rng.choice(lengths))
    half = rng.integers(FIRST_BRACKET_ID, FIRST_BRACKET_ID + 2, size=length // 2)
    half = half.tolist()
    return half + [PALINDROME_MARKER] + half[::-1]


def sample_positives(
    language, num, min_length, max_length, *, p=0.5, p1=0.25, seed=0, exclude=()
):
    """Positive strings of `language` with min_length <= len <= max_length.

    Args:
        language: 'D2', 'D3', 'D6' (any 'Dn') or 'palindrome'.
        num: number of strings.
        min_length, max_length: inclusive length range in symbols.
        p, p1: the PCFG probabilities of eq. 28 (Dyck languages only); need
            p > 0 and p + p1 <= 1.
        seed: seed of `numpy.random.default_rng`, or a Generator.
        exclude: a set of tuples that must not be returned (e.g. training).

    Returns:
        A list of lists of token ids (no START/END).
    """
    lengths = _feasible_lengths(language, min_length, max_length)
    n = bracket_types(language)
    if n is not None and not (0 < p and p1 >= 0 and p + p1 <= 1):
        raise ValueError(
            f"PCFG needs p > 0, p1 >= 0 and p + p1 <= 1; received p={p}, p1={p1}"
        )
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    strings = []
    attempts = 0
    limit = 10_000 + 5_000 * num
    if n is not None:
        draws = PcfgStrings(rng, n, p, p1, min_length, max_length)
        drawn = iter(draws)
    while len(strings) < num:
        attempts += 1
        if attempts > limit:
            raise ValueError(
                f"{language} positives in [{min_length}, {max_length}]: only "
                f"{len(strings)} of {num} found in {limit} draws; expected a length "
                "range the grammar reaches (adjust p, p1 or the range)"
            )
        if n is None:
            string = _sample_palindrome(rng, lengths)
        else:
            string = next(drawn)
            if string is None:
                continue
        if tuple(string) in exclude:
            continue
        strings.append(string)
    if n is not None:
        draws.settle()
    return strings


HARD_NEGATIVES = ("swap", "edit")


def _swap_two(rng, string):
    """Exchanges two positions holding different symbols, in place."""
    while True:
        i, j = rng.integers(len(string), size=2).tolist()
        if string[i] != string[j]:
            break
    string[i], string[j] = string[j], string[i]


def _swap(rng, string):
    """The paper's hard negative: 1 or 3 swaps of two different symbols."""
    string = list(string)
    for _ in range(int(rng.choice([1, 3]))):
        _swap_two(rng, string)
    return string


def _edit(rng, string, symbols):
    """1 to 3 edits, each a swap, an insertion or a deletion of one symbol."""
    string = list(string)
    for _ in range(int(rng.integers(1, 4))):
        operation = int(rng.integers(3))
        if operation == 0 and len(set(string)) > 1:
            _swap_two(rng, string)
        elif operation == 1 or len(string) == 0:  # insert
            position = int(rng.integers(len(string) + 1))
            string.insert(position, int(rng.choice(symbols)))
        else:  # delete
            del string[int(rng.integers(len(string)))]
    return string


def sample_negatives(
    language,
    positives,
    num,
    min_length,
    max_length,
    *,
    hard_fraction=None,
    hard_negatives="swap",
    seed=0,
    exclude=(),
):
    """Negative strings: random ones, a fraction of them replaced by hard ones.

    Args:
        language: as in `sample_positives`.
        positives: the split's positive strings (source of hard negatives and
            of the random negatives' lengths).
        num: number of negatives.
        min_length, max_length: inclusive length range.
        hard_fraction: fraction of hard negatives; defaults to a uniform draw
            from [0.15, 0.30] as in the paper.
        hard_negatives: how a hard negative is made from a positive:
            `"swap"` (the paper's: 1 or 3 swaps of two different symbols,
            same length and symbols) or `"edit"` (1 to 3 swaps, insertions
            or deletions; an insertion or deletion changes a Dyck string's
            length parity, which makes it easy to reject).
        seed: seed or Generator.
        exclude: tuples that must not be returned.

    Returns:
        `(strings, is_hard)`: a list of token-id lists and a bool array.
    """
    if not positives:
        raise ValueError("sample_negatives needs at least one positive string")
    if hard_negatives not in HARD_NEGATIVES:
        raise ValueError(
            f"hard_negatives must be one of {', '.join(map(repr, HARD_NEGATIVES))}; "
            f"received {hard_negatives!r}"
        )
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    symbols = alphabet(language)
    if hard_fraction is None:
        hard_fraction = rng.uniform(0.15, 0.30)
    num_hard = int(round(hard_fraction * num))
    lengths = [len(s) for s in positives if len(s) > 0] or [max(min_length, 1)]
    strings, is_hard = [], []
    limit = 10_000 + 1_000 * num
    attempts = 0
    while len(strings) < num:
        attempts += 1
        if attempts > limit:
            raise ValueError(
                f"{language} negatives in [{min_length}, {max_length}]: only "
                f"{len(strings)} of {num} found in {limit} draws; "
                "expected a wider range"
            )
        hard = len(strings) < num_hard
        if hard:
            source = positives[int(rng.integers(len(positives)))]
            if hard_negatives == "edit":
                string = _edit(rng, source, symbols)
            elif len(set(source)) > 1:
                string = _swap(rng, source)
            else:
                continue  # nothing to swap in it

        else:
            length = lengths[int(rng.integers(len(lengths)))]
            string = rng.choice(symbols, size=length).tolist()
        if not min_length <= len(string) <= max_length:
            continue
        if tuple(string) in exclude or is_member(string, language):
            continue
        strings.append(string)
        is_hard.append(hard)
    order = rng.permutation(num)
    return [strings[i] for i in order], np.asarray(is_hard, dtype=bool)[order]


@dataclasses.dataclass
class RecognitionSplit:
    """Strings of one split with their labels (1 = in the language)."""

    strings: list
    labels: np.ndarray
    is_hard: np.ndarray
    min_length: int
    max_length: int

    def __len__(self):
        return len(self.strings)


def make_split(
    language,
    size,
    min_length,
    max_length,
    *,
    p=0.5,
    p1=0.25,
    hard_fraction=None,
    hard_negatives="swap",
    seed=0,
    exclude=(),
):
    """A balanced split of `size` strings, shuffled: see the module docstring."""
    if size < 2:
        raise ValueError(
            f"split size must be >= 2 (a positive and a negative); received {size}."
        )
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    exclude = set(exclude)
    positives = sample_positives(
        language,
        size // 2,
        min_length,
        max_length,
        p=p,
        p1=p1,
        seed=rng,
        exclude=exclude,
    )
    negatives, hard = sample_negatives(
        language,
        positives,
        size - size // 2,
        min_length,
        max_length,
        hard_fraction=hard_fraction,
        hard_negatives=hard_negatives,
        seed=rng,
        exclude=exclude,
    )
    strings = positives + negatives
    labels = np.r_[np.ones(len(positives)), np.zeros(len(negatives))].astype(np.int32)
    is_hard = np.r_[np.zeros(len(positives), dtype=bool), hard]
    order = rng.permutation(len(strings))
    return RecognitionSplit(
        strings=[strings[i] for i in order],
        labels=labels[order],
        is_hard=is_hard[order],
        min_length=min_length,
        max_length=max_length,
    )


# (size, min_length, max_length) of the paper's splits. "long_120" and
# "long_160" are the longer-string tests of section 5.3 (1,500 strings each,
# longer than every main test string).
MALI_SPLITS = {
    "small": {
        "train": (6230, 1, 55),
        "valid": (1000, 21, 70),
        "test": (3000, 56, 102),
        "long_120": (1500, 103, 120),
        "long_160": (1500, 103, 160),
    },
    "D6": {
        "train": (15000, 1, 55),
        "valid": (2000, 21, 70),
        "test": (4000, 56, 102),
        "long_120": (1500, 103, 120),
        "long_160": (1500, 103, 160),
    },
}


# The test set of the paper's table captions: "short samples mixed with long
# ones up to length T=102". Half of its strings have the training lengths
# (1 <= T <= 55, none of them a training string), half the test lengths.
MIXED_TEST = ("test_mixed", ((1, 55), (56, 102)))


def mali_splits(language, *, p=0.5, p1=0.25, seed=0, scale=1.0, hard_negatives="swap"):
    """The paper's splits of `language`: train, valid, test, long_120, long_160.

    D2, D3 and the palindrome language: 6,230 train strings (length <= 55),
    1,000 valid (20 < T <= 70), 3,000 test (55 < T <= 102); D6: 15,000 /
    2,000 / 4,000 over the same lengths; both with two long tests of 1,500
    strings (102 < T <= 120 and 102 < T <= 160). `scale` multiplies every size
    (for quick runs). Strings of train never appear in another split.
    `hard_negatives` is passed to `sample_negatives`.

    Section 5 gives the test lengths as 55 < T <= 102; the captions of
    Tables 1-7 describe the test set as short strings mixed with long ones up
    to 102. Both are made: "test" as section 5, and "test_mixed"
    (`MIXED_TEST`), as many strings as "test", half of length 1 to 55 (none
    in train) and half 56 to 102, each half balanced.
    """
    bracket_types(language)
    table = MALI_SPLITS["D6" if language == "D6" else "small"]
    streams = np.random.SeedSequence(seed).spawn(len(table))
    splits = {}
    train_set = set()
    for (name, (size, lo, hi)), stream in zip(table.items(), streams, strict=True):
        splits[name] = make_split(
            language,
            max(2, int(round(size * scale))),
            lo,
            hi,
            p=p,
            p1=p1,
            hard_negatives=hard_negatives,
            seed=np.random.default_rng(stream),
            exclude=train_set,
        )
        if name == "train":
            train_set = {tuple(s) for s in splits[name].strings}
    name, ranges = MIXED_TEST
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(len(table) + 1)[-1])
    size = max(4, int(round(table["test"][0] * scale)))
    parts = [
        make_split(
            language,
            part_size,
            lo,
            hi,
            p=p,
            p1=p1,
            hard_negatives=hard_negatives,
            seed=rng,
            exclude=train_set,
        )
        for part_size, (lo, hi) in zip(
            (size // 2, size - size // 2), ranges, strict=True
        )
    ]
    order = rng.permutation(size)
    strings = parts[0].strings + parts[1].strings
    splits[name] = RecognitionSplit(
        strings=[strings[i] for i in order],
        labels=np.concatenate([part.labels for part in parts])[order],
        is_hard=np.concatenate([part.is_hard for part in parts])[order],
        min_length=ranges[0][0],
        max_length=ranges[-1][1],
    )
    return splits


@dataclasses.dataclass
class RecognitionArrays:
    """Padded arrays for a split; position t reads `inputs[:, t]`.

    Attributes:
        inputs: START then the symbols, PAD after; shape `(N, T + 1)`.
        targets: next symbols then END (the hybrid loss's next-step term).
        mask: float32, 1 on the `len + 1` real positions of each row.
        prefix_labels: float32, at position t the membership of the prefix of
            t symbols (see the module docstring); 0 on padding.
        labels: int32 `(N,)` string labels.
        lengths: int32 `(N,)` string lengths (symbols); the string is
            classified at position `lengths[i]`.
        legal_next: bool `(N, T + 1, vocab)`, at position t the symbols that
            may follow the prefix of t symbols (`legal_next`); all False on
            padding and after a string's first error.
    """

    inputs: np.ndarray
    targets: np.ndarray
    mask: np.ndarray
    prefix_labels: np.ndarray
    labels: np.ndarray
    lengths: np.ndarray
    legal_next: np.ndarray


def frame(split, language, length=None):
    """Frames a `RecognitionSplit` as `RecognitionArrays`."""
    strings = split.strings
    if not strings:
        raise ValueError("frame needs at least one string; received an empty split.")
    longest = max(len(s) for s in strings) + 1
    length = longest if length is None else length
    if length < longest:
        raise ValueError(
            f"length={length} is shorter than the longest string + 1 ({longest})"
        )
    n = len(strings)
    inputs = np.full((n, length), PAD_ID, dtype=np.int32)
    targets = np.full((n, length), PAD_ID, dtype=np.int32)
    labels = np.zeros((n, length), dtype=np.float32)
    lengths = np.zeros(n, dtype=np.int32)
    for row, string in enumerate(strings):
        size = len(string)
        inputs[row, 0] = START_ID
        inputs[row, 1 : size + 1] = string
        targets[row, :size] = string
        targets[row, size] = END_ID
        lengths[row] = size
    prefix, legal = frame_rows(strings, language, length)
    labels[:] = prefix
    return RecognitionArrays(
        inputs=inputs,
        targets=targets,
        mask=(targets != PAD_ID).astype(np.float32),
        prefix_labels=labels,
        labels=np.asarray(split.labels, dtype=np.int32),
        lengths=lengths,
        legal_next=legal,
    )
