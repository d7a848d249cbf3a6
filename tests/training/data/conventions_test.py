import pytest

from training.data import conventions, corpora

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
    assert conventions.normalize(text, "ptb") == expected


@pytest.mark.parametrize("text, expected", WIKITEXT)
def test_wikitext_writes_text_as_wikitext_does(text, expected):
    assert conventions.normalize(text, "wikitext") == expected


def test_ptb_characters_spell_the_ptb_words():
    # ptb.char.train.txt's first line is "a e r _ b a n k n o t e _ ...",
    # PTB's "aer banknote ...".
    assert (
        conventions.normalize("Aer banknote.", "ptb_char") == "a e r _ b a n k n o t e"
    )
    assert (
        conventions.normalize("Don't pay $5.", "ptb_char")
        == "d o _ n ' t _ p a y _ $ _ N"
    )


def test_text8_is_lower_case_letters_and_spelled_digits():
    assert (
        conventions.normalize("In 1990, the U.S. didn't.", "text8")
        == "in one nine nine zero the u s didn t"
    )


@pytest.mark.parametrize("name", ["plain", "characters", "bytes"])
def test_characters_bytes_and_plain_text_are_as_written(name):
    text = "Susan revealed  herself.\tÉ"
    assert conventions.normalize(text, name) == text


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
        assert set(by_level.values()) <= set(conventions.CONVENTIONS)


def test_unknown_names_are_one_line_errors():
    with pytest.raises(ValueError, match="Unknown conventions 'ptb2'; expected one"):
        conventions.normalize("a", "ptb2")
    with pytest.raises(ValueError, match="Unknown corpus 'ptb2'; expected one"):
        conventions.for_corpus("ptb2", "word")
