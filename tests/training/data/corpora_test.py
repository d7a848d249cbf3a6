import pytest

from tests.training.data.shared_data import SHARED
from training.data import corpora, files, tokenize


def _needs(folder):
    if not (SHARED / folder).is_dir():
        pytest.skip(
            f"{SHARED / folder} not found: set ZOO_DATA_DIR to the offline corpora"
        )


def _encode_all(corpus):
    vocab = tokenize.Vocabulary.build(corpus.train, corpus.level, corpus.add_eos)
    return vocab, {
        name: vocab.encode(text, split=name) for name, text in corpus.splits().items()
    }


def test_ptb_word_counts():
    _needs("ptb")
    corpus = corpora.load_ptb("word", data_dir=SHARED, download=False)
    vocab, encoded = _encode_all(corpus)
    assert len(vocab) == 10_000
    assert {name: len(e) for name, e in encoded.items()} == {
        "train": 929_589,
        "valid": 73_760,
        "test": 82_430,
    }
    assert all(e.num_oov == 0 for e in encoded.values())
    assert vocab.tokens[:2] == ["<unk>", "<eos>"]
    assert vocab.decode(encoded["train"].ids[:4]) == "aer banknote berlitz calloway"


def test_ptb_char_counts():
    _needs("ptb")
    corpus = corpora.load_ptb("char", data_dir=SHARED, download=False)
    vocab, encoded = _encode_all(corpus)
    # 4,975,414 symbols + one <eos> per line (42,068).
    assert len(encoded["train"]) == 4_975_414 + 42_068
    assert len(encoded["valid"]) == 389_672 + 3_370
    assert len(vocab) == 51  # 49 symbols, <eos> and <unk>
    assert vocab.decode(encoded["train"].ids[:4]) == "a e r _"


def test_wikitext2_counts():
    _needs("wikitext-2")
    corpus = corpora.load_wikitext2(data_dir=SHARED, download=False)
    vocab, encoded = _encode_all(corpus)
    assert len(vocab) == 33_278
    assert [len(encoded[n]) for n in ("train", "valid", "test")] == [
        2_088_628,
        217_646,
        245_569,
    ]


def test_wikitext2_bytes_and_their_word_counts():
    # Krause et al. 2016, section 4.4: the test file is 1,256,449 bytes and
    # 245,569 words, 5.1165 bytes a word (eq. 23).
    _needs("wikitext-2")
    corpus = corpora.load_wikitext2("byte", data_dir=SHARED, download=False)
    assert corpus.level == "byte" and not corpus.add_eos and corpus.word_text
    assert [len(corpus.train), len(corpus.valid), len(corpus.test)] == [
        10_797_148,
        1_121_681,
        1_256_449,
    ]
    assert corpus.test.startswith(b" \n = Robert <unk> = \n")
    assert tokenize.count_words(corpus.test) == 245_569
    assert tokenize.count_words(corpus.valid) == 217_646
    assert round(len(corpus.test) / tokenize.count_words(corpus.test), 4) == 5.1165


def _wikitext_folder(tmp_path):
    folder = tmp_path / "wikitext-2"
    folder.mkdir()
    for split in ("train", "valid", "test"):
        (folder / f"wiki.{split}.tokens").write_text(
            f" \n = {split} = \n caf\u00e9 @-@ 1 \n", encoding="utf-8"
        )
    return tmp_path


def test_wikitext_at_byte_level_reads_the_same_files(tmp_path, monkeypatch):
    monkeypatch.setenv(files.ACCEPT_MODIFIED_VAR, "1")  # not the real corpus
    data_dir = _wikitext_folder(tmp_path)
    words = corpora.load_corpus("wikitext2", level="word", data_dir=data_dir)
    as_bytes = corpora.load_corpus("wikitext2", level="byte", data_dir=data_dir)
    assert (words.level, words.add_eos, words.word_text) == ("word", True, True)
    assert (as_bytes.level, as_bytes.add_eos) == ("byte", False)
    assert as_bytes.test == words.test.encode("utf-8")
    assert as_bytes.name == words.name == "wikitext-2"


@pytest.mark.parametrize(
    "name, level", [("wikitext2", "char"), ("wikitext103", "char"), ("ptb", "byte")]
)
def test_a_level_a_corpus_is_not_read_at_is_one_line(name, level):
    with pytest.raises(ValueError, match=r"^Corpus '\w+' is read at level ") as info:
        corpora.load_corpus(name, level=level, data_dir="unused")
    assert f"received level={level!r}." in str(info.value)
    assert "\n" not in str(info.value)


def test_tiny_shakespeare_env_var(monkeypatch):
    _needs("tinyshakespeare")
    monkeypatch.setenv(files.ENV_VAR, str(SHARED))
    corpus = corpora.load_tiny_shakespeare(download=False)
    assert corpus.level == "char" and not corpus.add_eos
    assert len(corpus.train) + len(corpus.valid) + len(corpus.test) == 1_115_394
    assert len(corpus.valid) == pytest.approx(0.05 * 1_115_394, abs=1)
    assert corpus.train.startswith("First Citizen:")
    vocab = tokenize.Vocabulary.build(corpus.train, "char")
    assert len(vocab) == 66  # 65 characters + <unk>


def test_local_file_contiguous_split(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("".join(f"line {i}\n" for i in range(100)))
    corpus = corpora.load_text(path, "word", valid_fraction=0.1, test_fraction=0.1)
    assert corpus.add_eos and corpus.level == "word"
    assert corpus.train + corpus.valid + corpus.test == path.read_text()
    assert len(corpus.train) == pytest.approx(0.8 * len(path.read_text()), abs=1)
    as_bytes = corpora.load_text(path, "byte")
    assert isinstance(as_bytes.train, bytes)


def test_local_folder_with_named_splits(tmp_path):
    for split, text in (("train", "a b\n"), ("valid", "b\n"), ("test", "a\n")):
        (tmp_path / f"my.{split}.txt").write_text(text)
    corpus = corpora.load_text(tmp_path, "word")
    assert (corpus.train, corpus.valid, corpus.test) == ("a b\n", "b\n", "a\n")


def test_local_folder_concatenated(tmp_path):
    (tmp_path / "b.txt").write_text("second\n")
    (tmp_path / "a.txt").write_text("first\n")
    corpus = corpora.load_text(tmp_path, "char", valid_fraction=0, test_fraction=0)
    assert corpus.train == "first\nsecond\n"


def test_oov_in_a_split_is_an_error_or_counted(tmp_path):
    for split, text in (("train", "a b\n"), ("valid", "b c\n"), ("test", "a\n")):
        (tmp_path / f"{split}.txt").write_text(text)
    corpus = corpora.load_text(tmp_path, "word")
    vocab = tokenize.Vocabulary.build(corpus.train, "word", add_eos=True)
    with pytest.raises(ValueError, match=r"^valid: 1 tokens are not in the 4-token"):
        vocab.encode(corpus.valid, split="valid")
    assert vocab.encode(corpus.valid, on_oov="unk").num_oov == 1


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "make, level, error, message",
    [
        (
            lambda d: d / "missing.txt",
            "word",
            FileNotFoundError,
            r"missing.txt: no such file; expected a text file",
        ),
        (
            lambda d: _write(d, "empty.txt", b""),
            "word",
            ValueError,
            r"empty.txt: file is empty; expected text",
        ),
        (
            lambda d: _write(d, "latin1.txt", b"caf\xe9 ok\n"),
            "word",
            ValueError,
            r"latin1.txt: not valid UTF-8 at byte 3; expected UTF-8 text for "
            r"level='word'",
        ),
        (
            lambda d: _write(d, "x.txt", b"abc"),
            "subword",
            ValueError,
            r"level must be 'word', 'char' or 'byte'",
        ),
    ],
)
def test_bad_files(tmp_path, make, level, error, message):
    with pytest.raises(error, match=message) as info:
        corpora.load_text(make(tmp_path), level)
    assert "\n" not in str(info.value)


def test_non_utf8_is_fine_as_bytes(tmp_path):
    corpus = corpora.load_text(_write(tmp_path, "b.bin", b"\xff\xfe" * 50), "byte")
    assert corpus.train[:2] == b"\xff\xfe"


def test_bad_fractions(tmp_path):
    path = _write(tmp_path, "t.txt", b"abc\n")
    with pytest.raises(ValueError, match="expected fractions in"):
        corpora.load_text(path, "char", valid_fraction=0.6, test_fraction=0.5)


def test_load_corpus_by_name_or_file(tmp_path, monkeypatch):
    path = tmp_path / "tiny.txt"
    path.write_text("a b\n" * 50)
    by_file = corpora.load_corpus(f"file:{path}", level="word")
    assert by_file.train.startswith("a b")
    calls = []
    monkeypatch.setattr(corpora, "load_ptb", lambda *a, **k: calls.append((a, k)))
    corpora.load_corpus("ptb", level="char", data_dir="somewhere")
    assert calls == [(("char",), {"data_dir": "somewhere"})]
    with pytest.raises(ValueError, match="Unknown corpus 'nope'; expected one of: ptb"):
        corpora.load_corpus("nope")


def test_cut_lines_keeps_the_first_symbols_of_every_line():
    assert corpora.cut_lines("a b c d\ne f\n", 3, "word") == "a b c\ne f\n"
    assert corpora.cut_lines("abcdef\nxy", 4, "char") == "abcd\nxy"
    assert corpora.cut_lines(b"abcdef\nxy", 2, "byte") == b"ab\nxy"
