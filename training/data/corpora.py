"""Text corpus loaders (the data layer: the only library code that reads files).

Every loader returns a `Corpus` with the text of its train/valid/test splits and
the tokenization its papers use (`level`, `add_eos`), ready for
`training.data.tokenize.Vocabulary.build(corpus.train, corpus.level,
corpus.add_eos)`.

Files are looked for in `data_dir`, then in `ZOO_DATA_DIR`, checked against
their known sha256, and otherwise downloaded: see `training.data.files`.

Folders and files (`<folder>`: files):
    - `ptb`: `ptb.{train,valid,test}.txt`, `ptb.char.{train,valid,test}.txt`
    - `wikitext-2`: `wiki.{train,valid,test}.tokens`
    - `wikitext-103`: `wiki.{train,valid,test}.tokens`
    - `text8`: `text8` (or `text8.zip`)
    - `enwik8`: `enwik8` (or `enwik8.zip`)
    - `tinyshakespeare`: `input.txt`
"""

from __future__ import annotations

import dataclasses
import zipfile
from pathlib import Path

from training.data.files import find_local, locate


@dataclasses.dataclass
class Corpus:
    """Splits of a corpus and how to tokenize them.

    Attributes:
        name: corpus name.
        train, valid, test: the split texts (`str`, or `bytes` for byte level).
        level: `"word"`, `"char"` or `"byte"` (see `training.data.tokenize`).
        add_eos: whether every line ends with `<eos>`.
        word_text: whether the text is a word-level corpus's (whitespace
            between words, lines), whatever `level` reads it as, so that
            `training.data.tokenize.count_words` of a split is its word
            count (WikiText: what turns bits per byte into word perplexity).
    """

    name: str
    train: str | bytes
    valid: str | bytes
    test: str | bytes
    level: str
    add_eos: bool
    word_text: bool = False

    def splits(self):
        return {"train": self.train, "valid": self.valid, "test": self.test}


def read_bytes(path):
    """Bytes of `path`; FileNotFoundError / ValueError (empty) in one line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file; expected a text file")
    data = path.read_bytes()
    if not data:
        raise ValueError(f"{path}: file is empty; expected text")
    return data


def read_text(path, level="word"):
    """Text of `path` decoded as UTF-8 (bytes for `level="byte"`)."""
    data = read_bytes(path)
    if level == "byte":
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path}: not valid UTF-8 at byte {error.start}; expected UTF-8 text for "
            f"level={level!r} (use level='byte' for arbitrary bytes)"
        ) from None


def _split_files(name, folder, files, level, add_eos, data_dir, download):
    texts = [
        read_text(locate(folder, filename, data_dir, download), level)
        for filename in files
    ]
    return Corpus(name, *texts, level=level, add_eos=add_eos)


def cut_lines(text, cutoff, level):
    """Every line of `text` cut to its first `cutoff` symbols.

    The multi-matrix report's partial-sentence experiment (section 6.1)
    trains on sentences cut at 25, 50 or 75 characters, whitespace included.
    A symbol is what `level` tokenizes: a whitespace-separated token at
    `"word"` level (one character symbol of PTB's character files, `_`
    being the word boundary), a character at `"char"` level, a byte at
    `"byte"` level. Line breaks are kept, so every cut line still ends the
    way the corpus's lines do.
    """
    if level == "word":
        return "\n".join(" ".join(line.split()[:cutoff]) for line in text.split("\n"))
    newline = b"\n" if isinstance(text, bytes) else "\n"
    return newline.join(line[:cutoff] for line in text.split(newline))


# The levels each corpus that reads `task.level` can be read at (the
# others have one tokenization of their own, whatever the level).
CORPUS_LEVELS = {
    "ptb": ("word", "char"),
    "wikitext2": ("word", "byte"),
    "wikitext103": ("word", "byte"),
}


def check_level(name, level):
    """Raises a one-line `ValueError` unless corpus `name` reads at `level`."""
    levels = CORPUS_LEVELS.get(name)
    if levels is not None and level not in levels:
        raise ValueError(
            f"Corpus {name!r} is read at level {' or '.join(map(repr, levels))}; "
            f"received level={level!r}."
        )


def load_ptb(level="word", data_dir=None, download=True):
    """Penn Treebank, Mikolov's language-modelling version and splits.

    `level="word"`: the 10k-word files, `<eos>` after every line (929,589 /
    73,760 / 82,430 tokens, vocabulary 10,000). `level="char"`: Mikolov's
    character files, whose symbols (letters, `_` for a word boundary) are
    separated by spaces, so they are tokenized by whitespace with `<eos>` per
    line (the returned `Corpus.level` is `"word"`: each "word" is one
    character symbol): 4,975,414 + 42,068 train tokens, vocabulary 51 (49
    symbols, `<eos>` and an unused `<unk>`).

    Args:
        level: `"word"` or `"char"`.
        data_dir: folder with `ptb/` (or the files); else `ZOO_DATA_DIR`;
            else download.
        download: allow downloading when no local copy is found.
    """
    check_level("ptb", level)
    prefix = "ptb." if level == "word" else "ptb.char."
    files = [f"{prefix}{split}.txt" for split in ("train", "valid", "test")]
    corpus = _split_files(
        f"ptb-{level}", "ptb", files, "word", True, data_dir, download
    )
    if level == "char":
        # Mikolov's format follows every symbol, the newline too, with a space;
        # the space after a newline is not a symbol and would add an empty line.
        for split in ("train", "valid", "test"):
            setattr(corpus, split, getattr(corpus, split).replace("\n ", "\n"))
    return corpus


def _wikitext(name, folder, level, data_dir, download):
    check_level(name, level)
    files = [f"wiki.{split}.tokens" for split in ("train", "valid", "test")]
    corpus = _split_files(
        folder, folder, files, level, level == "word", data_dir, download
    )
    corpus.word_text = True
    return corpus


def load_wikitext2(level="word", data_dir=None, download=True):
    """WikiText-2 (v1, tokenized): words with `<eos>` after every line, or bytes.

    `level="word"`: 2,088,628 / 217,646 / 245,569 tokens, vocabulary
    33,278. `level="byte"`: the same files as UTF-8 bytes, as Krause et al.
    (2016, section 4.4) model them: 10,797,148 / 1,121,681 / 1,256,449
    bytes, no `<eos>` (the newlines are bytes). Either way the words of a
    split are counted as the word level counts them
    (`training.data.tokenize.count_words`; `Corpus.word_text`). Args as
    `load_ptb`; folder `wikitext-2/`.
    """
    return _wikitext("wikitext2", "wikitext-2", level, data_dir, download)


def load_wikitext103(level="word", data_dir=None, download=True):
    """WikiText-103 (v1, tokenized): words, `<eos>` after every line, or bytes.

    Levels as `load_wikitext2`; args as `load_ptb`; folder `wikitext-103/`.
    """
    return _wikitext("wikitext103", "wikitext-103", level, data_dir, download)


def _first_90_5_5(name, data, level):
    if len(data) < 100_000_000:
        raise ValueError(
            f"{name}: {len(data)} symbols; expected at least 100,000,000 for the "
            "90M/5M/5M split"
        )
    return Corpus(
        name,
        data[:90_000_000],
        data[90_000_000:95_000_000],
        data[95_000_000:100_000_000],
        level=level,
        add_eos=False,
    )


def _read_maybe_zipped(folder, filename, data_dir, download):
    local = find_local(folder, filename, data_dir)
    if local is None:
        zipped = find_local(folder, filename + ".zip", data_dir)
        if zipped is not None:
            with zipfile.ZipFile(zipped) as archive:
                return archive.read(filename)
        local = locate(folder, filename, data_dir, download)
    return read_bytes(local)


def load_text8(data_dir=None, download=True):
    """text8: characters, first 90M / next 5M / last 5M (Mikolov et al., 2012).

    Args as `load_ptb`; folder `text8/` holding `text8` or `text8.zip`.
    """
    data = _read_maybe_zipped("text8", "text8", data_dir, download)
    return _first_90_5_5("text8", data.decode("ascii"), "char")


def load_enwik8(data_dir=None, download=True):
    """enwik8 (Hutter Prize): bytes, first 90M / next 5M / last 5M.

    Args as `load_ptb`; folder `enwik8/` holding `enwik8` or `enwik8.zip`.
    """
    data = _read_maybe_zipped("enwik8", "enwik8", data_dir, download)
    return _first_90_5_5("enwik8", data, "byte")


def _contiguous_split(name, text, valid_fraction, test_fraction, level, add_eos):
    if not (0 <= valid_fraction < 1 and 0 <= test_fraction < 1) or (
        valid_fraction + test_fraction >= 1
    ):
        raise ValueError(
            f"valid_fraction={valid_fraction} and test_fraction={test_fraction}: "
            "expected fractions in [0, 1) summing to less than 1"
        )
    n = len(text)
    train_end = int(round(n * (1 - valid_fraction - test_fraction)))
    valid_end = int(round(n * (1 - test_fraction)))
    return Corpus(
        name,
        text[:train_end],
        text[train_end:valid_end],
        text[valid_end:],
        level=level,
        add_eos=add_eos,
    )


def load_tiny_shakespeare(
    data_dir=None, valid_fraction=0.05, test_fraction=0.05, download=True
):
    """Tiny Shakespeare (karpathy/char-rnn): characters, newlines kept as `"\\n"`.

    There is no official split; this one is contiguous: the first 90% train,
    then 5% valid and the last 5% test (char-rnn's default is 95/5 with no
    test). Folder `tinyshakespeare/`.
    """
    text = read_text(locate("tinyshakespeare", "input.txt", data_dir, download), "char")
    return _contiguous_split(
        "tinyshakespeare", text, valid_fraction, test_fraction, "char", False
    )


_SPLIT_STEMS = {
    "train": ("train",),
    "valid": ("valid", "validation", "dev", "val"),
    "test": ("test",),
}


def _named_split_files(folder):
    found = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        parts = path.name.lower().split(".")
        for split, stems in _SPLIT_STEMS.items():
            if any(stem in parts for stem in stems) and split not in found:
                found[split] = path
    return found if len(found) == 3 else None


def load_text(
    path, level="word", add_eos=None, valid_fraction=0.05, test_fraction=0.05
):
    """Any local UTF-8 text file or folder (or any file as bytes).

    A folder holding files named like `*train*`, `*valid*` (or `dev`, `val`,
    `validation`) and `*test*` (name parts split at dots, e.g.
    `wiki.train.tokens`, `train.txt`) gives those splits; any other folder is
    the concatenation of its files in path order. A single file or a
    concatenated folder is split contiguously: the first
    `1 - valid_fraction - test_fraction` for training, then valid, then test.

    Args:
        path: file or folder.
        level: `"word"`, `"char"` or `"byte"`.
        add_eos: end lines with `<eos>`; defaults to True for words.
        valid_fraction, test_fraction: for contiguous splits.
    """
    if level not in ("word", "char", "byte"):
        raise ValueError(f"level must be 'word', 'char' or 'byte'; received {level!r}.")
    if add_eos is None:
        add_eos = level == "word"
    path = Path(path)
    if path.is_dir():
        named = _named_split_files(path)
        if named is not None:
            texts = [
                read_text(named[split], level) for split in ("train", "valid", "test")
            ]
            return Corpus(path.name, *texts, level=level, add_eos=add_eos)
        files = sorted(p for p in path.rglob("*") if p.is_file())
        if not files:
            raise ValueError(f"{path}: folder has no files; expected text files")
        texts = [read_text(p, level) for p in files]
        text = (b"" if level == "byte" else "").join(texts)
    else:
        text = read_text(path, level)
    return _contiguous_split(
        path.name, text, valid_fraction, test_fraction, level, add_eos
    )


# The corpora a recipe may name (`task.corpus`), each with how to load it.
CORPORA = {
    "ptb": lambda level, data_dir: load_ptb(level, data_dir=data_dir),
    "wikitext2": lambda level, data_dir: load_wikitext2(level, data_dir=data_dir),
    "wikitext103": lambda level, data_dir: load_wikitext103(level, data_dir=data_dir),
    "text8": lambda level, data_dir: load_text8(data_dir=data_dir),
    "enwik8": lambda level, data_dir: load_enwik8(data_dir=data_dir),
    "tinyshakespeare": lambda level, data_dir: load_tiny_shakespeare(data_dir=data_dir),
}
FILE_PREFIX = "file:"


def check_corpus_name(name):
    """Raises a one-line `ValueError` unless `name` is in `CORPORA` or `file:PATH`."""
    if name not in CORPORA and not name.startswith(FILE_PREFIX):
        raise ValueError(
            f"Unknown corpus {name!r}; expected one of: {', '.join(CORPORA)}, "
            "or file:PATH for a local text file or folder."
        )


def load_corpus(name, level="word", data_dir=None):
    """The corpus `name`: one of `CORPORA`, or `file:PATH` (see `load_text`).

    `level` is the tokenization of PTB, WikiText and local files (the other
    corpora have their own; `CORPUS_LEVELS`); `data_dir` is where to look
    before downloading.
    """
    check_corpus_name(name)
    check_level(name, level)
    if name.startswith(FILE_PREFIX):
        return load_text(name[len(FILE_PREFIX) :], level=level)
    return CORPORA[name](level, data_dir)
