"""Text corpus loaders (the data layer: the only library code that reads files).

Every loader returns a `Corpus` with the text of its train/valid/test splits and
the tokenization its papers use (`level`, `add_eos`), ready for
`training.data.tokenize.Vocabulary.build(corpus.train, corpus.level,
corpus.add_eos)`.

Where files are looked for, in order:
    1. `data_dir` (argument), in `data_dir/<folder>/` and then `data_dir/`;
    2. the environment variable `ZOO_DATA_DIR`, the same way;
       a local file whose sha256 is known (PTB, WikiText-2, Tiny Shakespeare)
       must match it, unless `ZOO_ACCEPT_MODIFIED_DATA=1` accepts a
       deliberately modified copy;
    3. otherwise the canonical public copy is downloaded with
       `keras.utils.get_file` into Keras's cache (`~/.keras/datasets`) and
       checked against a sha256 (of the file, or of the extracted members when
       the archive itself has no published checksum).

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
import hashlib
import os
import zipfile
from pathlib import Path

ENV_VAR = "ZOO_DATA_DIR"
# Set to 1 to read local corpus files whose sha256 differs from the known one.
ACCEPT_MODIFIED_VAR = "ZOO_ACCEPT_MODIFIED_DATA"


@dataclasses.dataclass
class Corpus:
    """Splits of a corpus and how to tokenize them.

    Attributes:
        name: corpus name.
        train, valid, test: the split texts (`str`, or `bytes` for byte level).
        level: `"word"`, `"char"` or `"byte"` (see `training.data.tokenize`).
        add_eos: whether every line ends with `<eos>`.
    """

    name: str
    train: str | bytes
    valid: str | bytes
    test: str | bytes
    level: str
    add_eos: bool

    def splits(self):
        return {"train": self.train, "valid": self.valid, "test": self.test}


# Canonical sources. `sha256` checks the downloaded file; `members` the sha256
# of files inside an archive (computed from byte-identical copies, see
# /work/shared/data/*/PROVENANCE.md) when the archive has no published hash.
_PTB_MEMBERS = {
    "ptb.train.txt": "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf",  # noqa: E501
    "ptb.valid.txt": "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2",  # noqa: E501
    "ptb.test.txt": "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0",  # noqa: E501
    "ptb.char.train.txt": "e313d91425e06c4f0a8fb6e881dcce0c291f2a0e9f4dda54833069b122f91da9",  # noqa: E501
    "ptb.char.valid.txt": "21661f63ec355085879458b6524644d4add5573541b4be14fb52ab2e2e995eb8",  # noqa: E501
    "ptb.char.test.txt": "1ef5607ac3c463b16e38bfe7900dd3bfc91de5a96e0f21e7eab5188b465b8ebe",  # noqa: E501
}
_WIKITEXT2_MEMBERS = {
    "wiki.train.tokens": "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",  # noqa: E501
    "wiki.valid.tokens": "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",  # noqa: E501
    "wiki.test.tokens": "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",  # noqa: E501
}
SOURCES = {
    # Mikolov's archive (word and character PTB); no published archive hash,
    # so the extracted files are checked against _PTB_MEMBERS.
    "ptb": {
        "url": "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz",
        "sha256": None,
        "members": _PTB_MEMBERS,
    },
    # Salesforce's release (Merity et al., 2016); the archive hash is not
    # published, the members are checked.
    "wikitext-2": {
        "url": "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip",
        "sha256": None,
        "members": _WIKITEXT2_MEMBERS,
    },
    # No local copy to derive a checksum from: unchecked.
    "wikitext-103": {
        "url": "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip",
        "sha256": None,
        "members": {},
    },
    # Matt Mahoney's files; no local copy to derive a checksum from: unchecked.
    "text8": {
        "url": "http://mattmahoney.net/dc/text8.zip",
        "sha256": None,
        "members": {},
    },
    "enwik8": {
        "url": "http://mattmahoney.net/dc/enwik8.zip",
        "sha256": None,
        "members": {},
    },
    # karpathy/char-rnn; the same file as /work/shared/data/tinyshakespeare.
    "tinyshakespeare": {
        "url": "https://raw.githubusercontent.com/karpathy/char-rnn/master/"
        "data/tinyshakespeare/input.txt",
        "sha256": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
        "members": {},
    },
}


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _data_dirs(data_dir):
    dirs = []
    if data_dir is not None:
        dirs.append(Path(data_dir))
    if os.environ.get(ENV_VAR):
        dirs.append(Path(os.environ[ENV_VAR]))
    return dirs


def _find_local(folder, filename, data_dir):
    for root in _data_dirs(data_dir):
        for candidate in (root / folder / filename, root / filename):
            if candidate.is_file():
                return candidate
    return None


def _download(folder, filename):
    """Downloads the canonical copy of `folder` and returns the path of `filename`."""
    import keras

    source = SOURCES[folder]
    url = source["url"]
    archive = url.endswith((".zip", ".tgz", ".tar.gz"))
    try:
        path = Path(
            keras.utils.get_file(
                fname=f"{folder}-{url.rsplit('/', 1)[-1]}",
                origin=url,
                file_hash=source["sha256"],
                hash_algorithm="sha256",
                extract=archive,
                cache_subdir=os.path.join("datasets", "zoo"),
            )
        )
    except Exception as error:  # get_file raises a bare Exception on URL errors
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise FileNotFoundError(
            f"{folder}/{filename} is not in a data directory and downloading it "
            f"failed ({reason}); expected a folder holding {folder}/ given as "
            f"data_dir or {ENV_VAR}"
        ) from None
    if not archive:
        return path
    # Keras returns the archive or the extraction folder depending on version.
    roots = [path] if path.is_dir() else [path.parent]
    for root in roots:
        matches = sorted(root.rglob(filename))
        if matches:
            member = matches[0]
            expected = source["members"].get(filename)
            if expected is not None and _sha256(member) != expected:
                raise ValueError(
                    f"{member}: sha256 differs from the known {folder} file; expected "
                    f"{expected} (delete it to download again)"
                )
            return member
    raise FileNotFoundError(f"{filename} not found in the {folder} archive from {url}")


def known_sha256(folder, filename):
    """The sha256 of the canonical `folder/filename`, or `None` if unknown."""
    source = SOURCES.get(folder)
    if source is None:
        return None
    if filename in source["members"]:
        return source["members"][filename]
    if source["url"].rsplit("/", 1)[-1] == filename:
        return source["sha256"]
    return None


def check_local(folder, filename, path):
    """A one-line `ValueError` if `path` is not the known `folder/filename`."""
    expected = known_sha256(folder, filename)
    if expected is None or os.environ.get(ACCEPT_MODIFIED_VAR) == "1":
        return
    if _sha256(path) != expected:
        raise ValueError(
            f"{path}: sha256 differs from the known {folder} file; expected "
            f"{expected} (set {ACCEPT_MODIFIED_VAR}=1 to use a modified copy)"
        )


def _locate(folder, filename, data_dir, download=True):
    local = _find_local(folder, filename, data_dir)
    if local is not None:
        check_local(folder, filename, local)
        return local
    if not download:
        searched = ", ".join(str(d) for d in _data_dirs(data_dir)) or "no data_dir"
        raise FileNotFoundError(
            f"{folder}/{filename} not found in {searched}; expected it there "
            f"(set data_dir or {ENV_VAR}) or download=True"
        )
    return _download(folder, filename)


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
        read_text(_locate(folder, filename, data_dir, download), level)
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
    if level not in ("word", "char"):
        raise ValueError(f"PTB level must be 'word' or 'char'; received {level!r}.")
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


def load_wikitext2(data_dir=None, download=True):
    """WikiText-2 (v1, tokenized): words, `<eos>` after every line.

    2,088,628 / 217,646 / 245,569 tokens, vocabulary 33,278. Args as
    `load_ptb`; folder `wikitext-2/`.
    """
    files = [f"wiki.{split}.tokens" for split in ("train", "valid", "test")]
    return _split_files(
        "wikitext-2", "wikitext-2", files, "word", True, data_dir, download
    )


def load_wikitext103(data_dir=None, download=True):
    """WikiText-103 (v1, tokenized): words, `<eos>` after every line.

    Args as `load_ptb`; folder `wikitext-103/`.
    """
    files = [f"wiki.{split}.tokens" for split in ("train", "valid", "test")]
    return _split_files(
        "wikitext-103", "wikitext-103", files, "word", True, data_dir, download
    )


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
    local = _find_local(folder, filename, data_dir)
    if local is None:
        zipped = _find_local(folder, filename + ".zip", data_dir)
        if zipped is not None:
            with zipfile.ZipFile(zipped) as archive:
                return archive.read(filename)
        local = _locate(folder, filename, data_dir, download)
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
    text = read_text(
        _locate("tinyshakespeare", "input.txt", data_dir, download), "char"
    )
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
    "wikitext2": lambda level, data_dir: load_wikitext2(data_dir=data_dir),
    "wikitext103": lambda level, data_dir: load_wikitext103(data_dir=data_dir),
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

    `level` is the tokenization of PTB and of local files (the other corpora
    have their own); `data_dir` is where to look before downloading.
    """
    check_corpus_name(name)
    if name.startswith(FILE_PREFIX):
        return load_text(name[len(FILE_PREFIX) :], level=level)
    return CORPORA[name](level, data_dir)
