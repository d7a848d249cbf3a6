"""Natural text to ids and back (zoo/tokenizer.py)."""

import json

import pytest
import tensorflow as tf

from zoo import presets
from zoo.tokenizer import Tokenizer

DYCK_TOKENS = ["<pad>", "START", "END", "(a", "(b", "a)", "b)"]
WORDS = ["<unk>", "<eos>", "the", "cat", "sat", "'s", "N"]


def ptb_characters():
    """The tokenizer of the PTB character presets' vocabulary."""
    path = presets.preset_dir("mlstm_ptb_char") / "vocabulary.json"
    return Tokenizer.from_vocabulary(json.loads(path.read_text()))


def test_ptb_characters_read_natural_text_as_the_corpus_spells_it():
    tokenizer = ptb_characters()
    ids = tokenizer("The company said.")
    assert [tokenizer.id_to_token(i) for i in ids] == list("the_company_said")
    assert tokenizer("the company said") == ids
    assert tokenizer("xq zzv qqq") != ids
    assert tokenizer.detokenize(ids) == "the company said"
    assert tokenizer.write("It's 5%.") == "i t _ ' s _ N _ N"


def test_a_newline_is_the_end_of_line_token_and_back():
    tokenizer = Tokenizer(WORDS, add_eos=True, unk_token="<unk>", conventions="ptb")
    ids = tokenizer("The cat's\nsat.\n")
    assert ids == [2, 3, 5, 1, 4, 1]
    assert tokenizer.detokenize(ids) == "the cat 's\nsat\n"
    assert tokenizer(["the cat", ""]) == [[2, 3], []]
    assert tokenizer.detokenize([[2, 3], [4]]) == ["the cat", "sat"]
    # Pieces as they come: after a prompt, a word gets its space.
    assert list(tokenizer.pieces([4, 1, 2], continuing=True)) == [" sat", "\n", "the"]


def test_unknown_tokens_are_one_line_naming_them_unless_unk_is_asked_for():
    tokenizer = ptb_characters()
    with pytest.raises(ValueError) as error:
        tokenizer("Café @home, café!")
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(
        "The text has characters that are not in the vocabulary of this model: "
        "`é`, `@` (once written in its ptb_char conventions"
    )
    assert "or on_unknown=unk to read them as <unk>" in message
    ids = tokenizer("Café @home", on_unknown="unk")
    assert [tokenizer.id_to_token(i) for i in ids] == [*"caf", "<unk>", "_"] + [
        "<unk>",
        *"home",
    ]


def test_dyck_brackets_are_tokens_separated_by_white_space():
    tokenizer = Tokenizer(DYCK_TOKENS)
    assert tokenizer.conventions == "plain"
    assert tokenizer("(a  (b b)\ta)") == [3, 4, 6, 5]
    assert tokenizer.detokenize([1, 3, 5, 2]) == "START (a a) END"
    with pytest.raises(ValueError) as error:
        tokenizer("(a (c foo", on_unknown="unk")
    assert str(error.value).startswith(
        "The text has tokens that are not in the vocabulary of this model: `(c`, `foo` "
    )
    assert "the vocabulary has no unknown token to read them as" in str(error.value)


def test_bytes_are_the_utf8_of_the_text():
    tokenizer = Tokenizer(None, level="byte")
    assert tokenizer("hé") == [104, 195, 169]
    assert tokenizer.detokenize([104, 195, 169]) == "hé"
    # A character comes out once its bytes are whole.
    assert list(tokenizer.pieces([104, 195, 169])) == ["h", "", "é", ""]


def test_characters_are_tokens_and_a_newline_one_without_eos():
    tokenizer = Tokenizer(["<unk>", "a", "b", "\n"], level="char", unk_token="<unk>")
    assert tokenizer("ab\nb") == [1, 2, 3, 2]
    assert tokenizer.detokenize([1, 2, 3, 2]) == "ab\nb"


def test_in_a_graph_ids_are_the_same_and_an_unknown_token_is_named():
    tokenizer = ptb_characters()

    def in_graph(on_unknown):
        """`id_tensor` in a graph traced once for batches of any size."""
        return tf.function(
            lambda texts: tokenizer.id_tensor(texts, on_unknown),
            input_signature=[tf.TensorSpec([None], tf.string)],
        )

    ids = in_graph("error")
    texts = ["The company said.", "xq zzv qqq", ""]
    assert ids(tf.constant(texts)).to_list() == tokenizer(texts)
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        ids(tf.constant(["fine", "Café @home, café!"]))
    assert tokenizer.unknown_message("`é`, `@`") in str(error.value)
    assert ids.experimental_get_tracing_count() == 1
    served = in_graph("unk")(tf.constant(["Café @home"])).to_list()
    assert served == tokenizer(["Café @home"], on_unknown="unk")
    # Lines end with <eos> when asked, as the training text's do.
    ended = tokenizer.id_tensor(tf.constant(["ab", "a\n", ""]), end_lines=True)
    eos = tokenizer.eos_id
    assert ended.to_list() == [[*tokenizer("ab"), eos], [*tokenizer("a"), eos], [eos]]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: Tokenizer(WORDS, level="line"), "level must be one of"),
        (lambda: Tokenizer(WORDS, conventions="ptb2"), "Unknown conventions 'ptb2'"),
        (lambda: Tokenizer(WORDS, unk_token="<oov>"), "unk_token '<oov>' is not in"),
        (lambda: Tokenizer(DYCK_TOKENS, add_eos=True), "eos_token '<eos>' is not in"),
        (lambda: Tokenizer(WORDS)("the", on_unknown="skip"), "on_unknown must be"),
        (lambda: Tokenizer(WORDS).detokenize([2, 7]), r"Token id 7 is not in this"),
        (lambda: Tokenizer(WORDS).token_to_id("dog"), "'dog' is not a token"),
    ],
)
def test_invalid_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_vocabulary_dict_round_trips_through_the_config():
    tokenizer = ptb_characters()
    again = Tokenizer(**tokenizer.get_config())
    assert again.get_config() == tokenizer.get_config()
    assert again.conventions == "ptb_char" and again.vocabulary_size() == 51
    assert again.token_to_id("_") == 2 and again.unk_id == 0 and again.eos_id == 1
