"""The text conventions (zoo/text_conventions.py): corpora's spellings."""

import pytest
import tensorflow as tf

from zoo import text_conventions

# (text as a suite writes it, the corpus's line): the lines are from the
# corpora's files, the first of PTB's (`<unk>` there stands for the names
# that are not in its 10k words) and WikiText-2's training split.
PTB = [
    (
        "Pierre Vinken, 61 years old, will join the board as a nonexecutive "
        "director Nov. 29.",
        "pierre vinken N years old will join the board as a nonexecutive "
        "director nov. N",
    ),
    (
        "Mr. Vinken is chairman of Elsevier N.V., the Dutch publishing group.",
        "mr. vinken is chairman of elsevier n.v. the dutch publishing group",
    ),
    ("Susan revealed herself.", "susan revealed herself"),
    ("Renee hasn't hurt herself.", "renee has n't hurt herself"),
    ("They can't, and won't; it's John's.", "they ca n't and wo n't it 's john 's"),
    ("The dancers' snack-food costs $5,000.50?", "the dancers ' snack-food costs $ N"),
    ("Prices rose 12% (to 3.5) -- cannot last", "prices rose N N to N can not last"),
    ("O'Brien's firm is in the U.S.", "o'brien 's firm is in the u.s."),
    (
        "I'm sure they're, we've, he'd, you'll...",
        "i 'm sure they 're we 've he 'd you 'll",
    ),
]
WIKITEXT = [
    (
        "It met with positive sales in Japan, and was praised by both Japanese "
        "and western critics.",
        "It met with positive sales in Japan , and was praised by both Japanese "
        "and western critics .",
    ),
    (
        "The game's opening theme was sung by May'n.",
        "The game 's opening theme was sung by May 'n .",
    ),
    (
        "Valkyria Chronicles III is a tactical role-playing video game (2011).",
        "Valkyria Chronicles III is a tactical role @-@ playing video game ( 2011 ) .",
    ),
    (
        "It wasn't until 152,500 people paid 5.5%!",
        "It wasn 't until 152 @,@ 500 people paid 5 @.@ 5 % !",
    ),
    ("Mr. O'Brien's \"boys'\" team", "Mr. O 'Brien 's \" boys ' \" team"),
    ("Susan revealed herself.", "Susan revealed herself ."),
    ("Who did the U.S. help?", "Who did the U.S. help ?"),
    ("It went to the U.S.", "It went to the U.S. ."),
]


@pytest.mark.parametrize("text, expected", PTB)
def test_ptb_writes_text_as_mikolovs_ptb_does(text, expected):
    assert text_conventions.write(text, "ptb") == expected


@pytest.mark.parametrize("text, expected", WIKITEXT)
def test_wikitext_writes_text_as_wikitext_does(text, expected):
    assert text_conventions.write(text, "wikitext") == expected


def test_ptb_characters_spell_the_ptb_words():
    # ptb.char.train.txt's first line is "a e r _ b a n k n o t e _ ...",
    # PTB's "aer banknote ...".
    assert (
        text_conventions.write("Aer banknote.", "ptb_char") == "a e r _ b a n k n o t e"
    )
    assert (
        text_conventions.write("Don't pay $5.", "ptb_char")
        == "d o _ n ' t _ p a y _ $ _ N"
    )


def test_text8_is_lower_case_letters_and_spelled_digits():
    assert (
        text_conventions.write("In 1990, the U.S. didn't.", "text8")
        == "in one nine nine zero the u s didn t"
    )


@pytest.mark.parametrize("name", ["plain", "characters", "bytes"])
def test_characters_bytes_and_plain_text_are_as_written(name):
    text = "Susan revealed  herself.\tÉ"
    assert text_conventions.write(text, name) == text


def test_unknown_conventions_are_a_one_line_error():
    with pytest.raises(ValueError, match="Unknown conventions 'ptb2'; expected one"):
        text_conventions.write("a", "ptb2")


def test_lines_are_written_one_by_one_and_blank_lines_stay():
    # A newline is a line's end in every convention (an <eos> where the
    # vocabulary has one), blank lines included.
    text = "Mr. Lee left.\n\nHe paid $5.\n"
    assert text_conventions.write(text, "ptb") == "mr. lee left\n\nhe paid $ N\n"
    assert text_conventions.write(text, "ptb_char").split("\n") == [
        "m r . _ l e e _ l e f t",
        "",
        "h e _ p a i d _ $ _ N",
        "",
    ]


@pytest.mark.parametrize("name", ["ptb", "ptb_char", "wikitext", "text8", "blimp"])
def test_a_graph_writes_text_as_python_does(name):
    # A SavedModel runs the conventions in a graph (the peeling loop a
    # tf.while_loop); Python callers run them eagerly, a batch or one text.
    texts = [text for text, _ in PTB + WIKITEXT] + ["", "(U.S.)...", "1,2,3 a-b-c"]
    graph = tf.function(text_conventions.write_tensor)(tf.constant(texts), name)
    eager = text_conventions.write(texts, name)
    assert [text.decode() for text in graph.numpy()] == eager
    assert [text_conventions.write(text, name) for text in texts] == eager


def test_the_acceptability_words_split_off_every_punctuation_character():
    assert text_conventions.write("Who didn't Éva see, Mr. Lee?", "blimp").split() == [
        *["who", "didn", "'", "t", "éva", "see", ",", "mr", ".", "lee", "?"]
    ]
