import pytest

from tests.training.data.shared_data import SHARED
from training.data import conventions, corpora
from zoo import text_conventions


def test_each_corpus_names_its_conventions():
    assert set(conventions.CORPUS_CONVENTIONS) == set(corpora.CORPORA)
    assert conventions.for_corpus("ptb", "word") == "ptb"
    assert conventions.for_corpus("ptb", "char") == "ptb_char"
    assert conventions.for_corpus("wikitext2", "word") == "wikitext"
    assert conventions.for_corpus("wikitext2", "byte") == "wikitext"
    assert conventions.for_corpus("wikitext103", "word") == "wikitext"
    assert conventions.for_corpus("text8", "char") == "text8"
    assert conventions.for_corpus("enwik8", "byte") == "bytes"
    assert conventions.for_corpus("tinyshakespeare", "char") == "characters"
    assert conventions.for_corpus("file:/tmp/x.txt", "word") == "plain"
    assert conventions.for_corpus("file:/tmp/x.txt", "char") == "characters"
    for by_level in conventions.CORPUS_CONVENTIONS.values():
        assert set(by_level.values()) <= set(text_conventions.CONVENTIONS)


def test_unknown_corpora_are_one_line_errors():
    with pytest.raises(ValueError, match="Unknown corpus 'ptb2'; expected one"):
        conventions.for_corpus("ptb2", "word")


def test_ptb_character_files_are_ptb_lines_in_their_conventions():
    # ptb.char.valid.txt spells out ptb.valid.txt line by line; the
    # conventions give every such line (but those with the token N, which
    # natural text writes as a number and the conventions lower-case).
    folder = SHARED / "ptb"
    if not folder.is_dir():
        pytest.skip(f"{folder} not found: set ZOO_DATA_DIR to the offline corpora")
    words = (folder / "ptb.valid.txt").read_text().split("\n")
    characters = (folder / "ptb.char.valid.txt").read_text().split("\n")
    pairs = [
        (line.strip(), spelled.strip())
        for line, spelled in zip(words, characters, strict=True)
        if "N" not in line.split()
    ]
    assert len(pairs) > 2000
    name = conventions.for_corpus("ptb", "char")
    written = text_conventions.write([line for line, _ in pairs], name)
    assert written == [spelled for _, spelled in pairs]
