"""Acceptability classification on minimal-pair suites (BLiMP): the data.

Each pair of a suite (a `.jsonl` file with `sentence_good` / `sentence_bad`,
read by `training.data.minimal_pairs.load_jsonl`) gives two sentences:
`sentence_good` labelled 1 (acceptable) and `sentence_bad` 0. The suites are
BLiMP's 67 paradigm files in the folder `blimp/` of the data directory
(`task.data_dir`, then `ZOO_DATA_DIR`, as the corpora).

Splits hold whole suites (`split_suites`), so the test measures accuracy on
paradigms no training sentence came from: for each phenomenon (a suite's
`linguistics_term`, 13 in BLiMP) its suites, sorted by name, are shuffled
with the split seed; the first is a test suite, the second a validation
suite when the phenomenon has three or more, the rest are training suites.
BLiMP then gives 45 training, 9 validation and 13 test suites, every
phenomenon among the test suites (and among the training suites).

Words (`tokenize`): the `blimp` conventions of `zoo.text_conventions`: the
text is lower-cased and every character that is neither a letter, a digit
nor white space becomes a token of its own; white space then separates the
tokens: "Susan revealed herself." is `susan revealed herself .`, "didn't" is
`didn ' t`. The vocabulary (`build_vocabulary`) names them, so the exported
SavedModel and `zoo.tokenizer.Tokenizer` read raw text the same way; it is
`<pad>` (id 0), `<unk>`, then the training suites' words by decreasing
count; other words become `<unk>`. This is the task's own convention, not a
corpus's: another of `zoo.text_conventions` (PTB's, as a word language
model's corpus would need) could replace it in `CONVENTIONS`.
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np

from training.data.files import ENV_VAR, find_local_folder
from training.data.minimal_pairs import load_jsonl
from training.data.tokenize import Vocabulary
from zoo.text_conventions import write

SUITE_FOLDER = "blimp"
PAD, UNK = "<pad>", "<unk>"
PAD_ID = 0
ACCEPTABLE, UNACCEPTABLE = 1, 0
SPLITS = ("train", "valid", "test")
CONVENTIONS = "blimp"  # the task's words (`zoo.text_conventions`)


def tokenize(sentences):
    """The tokens of each sentence (a list of str), in the task's conventions."""
    return [text.split() for text in write(list(sentences), CONVENTIONS)]


def find_suites(data_dir=None):
    """The paths of the suite files (`*.jsonl`) in `blimp/`, sorted by name.

    Raises:
        FileNotFoundError: no `blimp/` folder with suites in `data_dir` or
            `ZOO_DATA_DIR` (one line, naming both).
    """
    folder = find_local_folder(SUITE_FOLDER, data_dir)
    paths = sorted(folder.glob("*.jsonl")) if folder is not None else []
    if not paths:
        where = (
            str(folder) if folder is not None else f"data_dir={data_dir!r} or {ENV_VAR}"
        )
        raise FileNotFoundError(
            f"No minimal-pair suites ({SUITE_FOLDER}/*.jsonl) found in {where}; "
            f"expected BLiMP's suite files there (set task.data_dir or {ENV_VAR} "
            "to the folder holding blimp/)."
        )
    return paths


def load_suites(data_dir=None, pairs_per_suite=None):
    """`{suite: [MinimalPair, ...]}` of every suite, the first `pairs_per_suite` each.

    Args:
        data_dir: Where `blimp/` is (else `ZOO_DATA_DIR`).
        pairs_per_suite: Positive integer, how many pairs of each suite to
            keep (the file's first ones), or `None` for all.
    """
    if pairs_per_suite is not None and pairs_per_suite < 1:
        raise ValueError(
            f"pairs_per_suite must be >= 1 or None; received {pairs_per_suite!r}."
        )
    suites = {}
    for path in find_suites(data_dir):
        suites[path.stem] = load_jsonl(path)[:pairs_per_suite]
    return suites


def split_suites(suites, seed=0):
    """`{"train", "valid", "test"}` -> sorted suite names; whole suites per split.

    Per phenomenon (each suite's category, its first pair's), the suites
    sorted by name are shuffled with `seed`: the first is a test suite, the
    second a validation suite when there are three or more, the others are
    training suites (see the module docstring).
    """
    by_category = collections.defaultdict(list)
    for name, pairs in suites.items():
        by_category[pairs[0].category].append(name)
    rng = np.random.default_rng(seed)
    splits = {split: [] for split in SPLITS}
    for category in sorted(by_category):
        names = sorted(by_category[category])
        names = [names[i] for i in rng.permutation(len(names))]
        splits["test"].append(names[0])
        if len(names) >= 3:
            splits["valid"].append(names[1])
        splits["train"] += names[1 + (len(names) >= 3) :]
    if not splits["train"] or not splits["valid"]:
        raise ValueError(
            f"{len(suites)} suites in {len(by_category)} phenomena leave no "
            "training or no validation suite; expected a phenomenon with three "
            "or more suites."
        )
    return {split: sorted(names) for split, names in splits.items()}


def build_vocabulary(sentences):
    """`<pad>`, `<unk>`, then the words of `sentences` by count (ties by spelling)."""
    counts = collections.Counter(
        word for words in tokenize(sentences) for word in words
    )
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    words = [word for word, _ in ranked if word not in (PAD, UNK)]
    return Vocabulary(
        [PAD, UNK, *words], level="word", unk_token=UNK, conventions=CONVENTIONS
    )


@dataclasses.dataclass
class AcceptabilityArrays:
    """The sentences of a split, each pair's good one then its bad one.

    Attributes:
        inputs: int32 `(2 * pairs, T)` word ids, PAD_ID after the end.
        labels: int32 `(2 * pairs,)`, 1 for `sentence_good`, 0 for
            `sentence_bad`.
        pairs: int32 `(2 * pairs,)`, the pair each sentence belongs to.
        suites, categories: str `(2 * pairs,)`, its suite and phenomenon.
        lengths: int32 `(2 * pairs,)`, words per sentence.
        num_oov: words that were not in the vocabulary (now `<unk>`).
    """

    inputs: np.ndarray
    labels: np.ndarray
    pairs: np.ndarray
    suites: np.ndarray
    categories: np.ndarray
    lengths: np.ndarray
    num_oov: int


def sentences_of(pairs):
    """Every pair's good sentence then its bad one, in order."""
    return [sentence for pair in pairs for sentence in (pair.good, pair.bad)]


def frame(pairs, vocabulary):
    """The `AcceptabilityArrays` of `pairs` (`MinimalPair`s) in `vocabulary`."""
    if not pairs:
        raise ValueError("frame needs at least one pair; received none.")
    words = tokenize(sentences_of(pairs))
    unk_id = vocabulary.unk_id
    index = {token: i for i, token in enumerate(vocabulary.tokens)}
    length = max(1, max(len(w) for w in words))
    inputs = np.full((len(words), length), PAD_ID, dtype=np.int32)
    num_oov = 0
    for row, sentence in enumerate(words):
        ids = [index.get(word, unk_id) for word in sentence]
        num_oov += sum(i == unk_id for i in ids)
        inputs[row, : len(ids)] = ids
    labels = np.tile(np.array([ACCEPTABLE, UNACCEPTABLE], np.int32), len(pairs))
    return AcceptabilityArrays(
        inputs=inputs,
        labels=labels,
        pairs=np.repeat(np.arange(len(pairs), dtype=np.int32), 2),
        suites=np.repeat(np.array([p.suite for p in pairs]), 2),
        categories=np.repeat(np.array([p.category for p in pairs]), 2),
        lengths=np.array([len(w) for w in words], dtype=np.int32),
        num_oov=int(num_oov),
    )
