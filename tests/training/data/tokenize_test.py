import json

import numpy as np
import pytest
import tensorflow as tf

from training.data import tokenize

TEXT = "the cat sat\n\nthe dog  sat down\n"


def test_word_tokens_with_eos_per_line():
    tokens = tokenize.tokenize(TEXT, "word", add_eos=True).numpy().tolist()
    assert tokens == [
        b"the",
        b"cat",
        b"sat",
        b"<eos>",
        b"<eos>",
        b"the",
        b"dog",
        b"sat",
        b"down",
        b"<eos>",
    ]


def test_count_words_is_the_word_level_length_with_eos():
    # Whitespace-separated tokens plus one <eos> per line, blank lines too;
    # the final newline does not start a line.
    text = " = Title = \n \n a  b\tc \nlast"
    assert tokenize.count_words(text) == 3 + 1 + 0 + 1 + 3 + 1 + 1 + 1
    assert tokenize.count_words(text.encode("utf-8")) == 11
    assert tokenize.count_words(text + "\n") == 11
    vocab = tokenize.Vocabulary.build(text, "word", add_eos=True)
    assert tokenize.count_words(text) == len(vocab.encode(text))
    assert tokenize.count_words("caf\u00e9 na\u00efve\n") == 3


def test_char_tokens():
    with_eos = tokenize.tokenize("ab\nc\n", "char", add_eos=True).numpy().tolist()
    assert with_eos == [b"a", b"b", b"<eos>", b"c", b"<eos>"]
    plain = tokenize.tokenize("h\u00e9\n", "char").numpy().tolist()
    assert plain == [b"h", "\u00e9".encode(), b"\n"]


def test_vocabulary_order_and_encoding():
    vocab = tokenize.Vocabulary.build(TEXT, "word", add_eos=True)
    assert vocab.tokens == ["<unk>", "<eos>", "sat", "the", "cat", "dog", "down"]
    assert vocab.encode("the cat\n").ids.tolist() == [3, 4, 1]
    assert vocab.decode([3, 4, 1]) == "the cat <eos>"


def test_oov_maps_to_unk_and_is_counted():
    vocab = tokenize.Vocabulary.build(TEXT, "word", add_eos=True)
    encoded = vocab.encode("the bird sat on it\n", on_oov="unk")
    assert encoded.ids.tolist() == [3, 0, 2, 0, 0, 1]
    assert encoded.num_oov == 3


def test_vocabulary_from_training_split_only_and_json_roundtrip():
    vocab = tokenize.Vocabulary.build("a b\n", "word", add_eos=True, max_size=3)
    assert vocab.tokens == ["<unk>", "<eos>", "a"]
    restored = tokenize.Vocabulary.from_json(vocab.to_json())
    assert restored == vocab and restored.level == "word" and restored.add_eos
    char_vocab = tokenize.Vocabulary.build("ab\nb\n", "char")
    restored = tokenize.Vocabulary.from_json(char_vocab.to_json())
    assert (
        restored.encode("b\na").ids.tolist() == char_vocab.encode("b\na").ids.tolist()
    )
    assert "\n" in restored.tokens


def test_the_vocabulary_records_its_corpus_conventions():
    vocab = tokenize.Vocabulary.build("a b\n", "word", True, conventions="ptb")
    assert tokenize.Vocabulary.from_json(vocab.to_json()).conventions == "ptb"
    # None (not a text) is recorded too: the key is always there.
    vocab.conventions = None
    assert json.loads(vocab.to_json())["conventions"] is None


def test_min_count():
    vocab = tokenize.Vocabulary.build("a a b\n", "word", min_count=2)
    assert vocab.tokens == ["<unk>", "a"]


def test_bytes():
    vocab = tokenize.Vocabulary.build(b"\xff\x00a", "byte")
    assert len(vocab) == 256
    assert vocab.encode("h\u00e9").ids.tolist() == [104, 195, 169]
    assert vocab.decode([104, 195, 169]) == "h\u00e9".encode()


@pytest.mark.parametrize(
    "level, text", [("word", TEXT), ("char", "ab\nc"), ("byte", "x\u00e9")]
)
def test_the_tokenizer_of_a_vocabulary_reads_its_text_as_encode_does(level, text):
    vocab = tokenize.Vocabulary.build(TEXT + "ab\nc", level, add_eos=level == "word")
    tokenizer = vocab.tokenizer()
    ids = tokenizer.id_tensor(tf.constant([text]), on_unknown="unk", end_lines=True)
    np.testing.assert_array_equal(ids[0], vocab.encode(text, on_oov="unk").ids)


def test_a_vocabulary_tokenizer_reads_in_its_conventions_else_as_written():
    vocab = tokenize.Vocabulary.build(TEXT, "word", add_eos=True)
    assert vocab.tokenizer().conventions == "plain"
    vocab.conventions = "wikitext"
    assert vocab.tokenizer().conventions == "wikitext"


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda v: v.encode("the bird\n", split="valid"),
            r"valid: 1 tokens are not in the 7-token vocabulary \(first: 'bird'\); "
            r"expected only vocabulary tokens "
            r"\(pass on_oov='unk' to map them to <unk>\)",
        ),
        (
            lambda v: tokenize.Vocabulary(["a", "b"], unk_token=None).encode(
                "a c", on_oov="unk"
            ),
            r"1 tokens are not in the 2-token vocabulary \(first: 'c'\); expected "
            r"only vocabulary tokens \(this vocabulary has no unknown-token entry",
        ),
        (lambda v: v.encode("the\n", on_oov="drop"), "on_oov must be 'error' or 'unk'"),
        (lambda v: tokenize.Vocabulary.build("a", "subword"), "level must be one of"),
        (lambda v: tokenize.Vocabulary(["a", "a"], unk_token=None), "must be unique"),
        (
            lambda v: tokenize.Vocabulary(["a"]),
            "unk_token '<unk>' is not in the tokens",
        ),
    ],
)
def test_bad_inputs(call, message):
    vocab = tokenize.Vocabulary.build(TEXT, "word", add_eos=True)
    with pytest.raises(ValueError, match=message) as info:
        call(vocab)
    assert "\n" not in str(info.value)
