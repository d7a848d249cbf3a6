"""The spelling conventions of the corpora, to write other text in them.

A word-level vocabulary holds its training corpus's tokens as that corpus
writes them, so text from elsewhere (a minimal-pair suite: `"Susan revealed
herself."`) must be written the same way before its words can be found:
on a PTB vocabulary `herself.` is unknown, `herself` is not. Each
convention is a function from text to text, whose whitespace-separated
tokens are then looked up as the training text's were (a word that is not in
the vocabulary still becomes `<unk>` there):

- `ptb`: Mikolov's Penn Treebank: lower case; clitics split as the Treebank
  does (`don't` -> `do n't`, `can't` -> `ca n't`, `John's` -> `john 's`,
  `boys'` -> `boys '`, `cannot` -> `can not`); punctuation dropped
  (`$`, `&`, `#` and abbreviations such as `mr.` stay); numbers and `%` as
  `N`; hyphenated words whole (`snack-food`).
- `ptb_char`: PTB's character files: the `ptb` words, each character a
  symbol and `_` between words (`s u s a n _ r e v e a l e d`).
- `wikitext`: WikiText-2/103, read as words or as bytes: case kept;
  punctuation split off as tokens; a hyphen between word characters as
  `@-@`, a comma and a decimal point inside a number as `@,@` and `@.@`
  (`1 @,@ 000`, `3 @.@ 5`); a word split before its apostrophe (`don 't`,
  `game 's`, `O 'Brien`).
- `text8`: lower case, digits spelled out, every other character a space.
- `plain` (a word-level local `file:` corpus, whose conventions are
  unknown), `characters` and `bytes`: the text as it is.

`for_corpus(corpus, level)` names the convention of a recipe's corpus; the
name is recorded in `vocabulary.json` (`Vocabulary.conventions`) when a run
is trained, and derived from the recipe for runs from before.

Abbreviations: a word ending in `.` keeps it inside a sentence (`Mr.`),
which is how both corpora write abbreviations; at the end of the text the
`.` ends the sentence and is split off, except after an initialism
(`U.S.`), which keeps it (and, in `wikitext`, is followed by a `.`).
"""

import re

from training.data.corpora import CORPORA, FILE_PREFIX

# Split off the front and the back of a word, one character at a time.
_OPENING = set('"([{`“$£€#')
_CLOSING = set('")]}”,;:!?%')
_INITIALISM = re.compile(r"(?:[^\W\d_]\.){2,}")
_DASHES = re.compile(r"(--+|–|—)")
# PTB drops these tokens (its text keeps `$`, `&`, `#`, `'` and `%` as `N`).
_PTB_DROPPED = set('"()[]{}`“”,;:!?.-') | {"...", "--", "–", "—", "``", "''"}
_NUMBER = re.compile(r"[+-]?(?:\d+(?:[,.]\d+)*|\.\d+)")
_PTB_CLITIC = re.compile(r"(.+?)(n't|'s|'re|'ve|'m|'ll|'d|')", re.IGNORECASE)
_DIGITS = "zero one two three four five six seven eight nine".split()


def _split_punctuation(text):
    """Words and punctuation tokens of `text`, apostrophes made straight.

    Opening and closing punctuation is split off each word; a word's final
    `.` only at the end of the text (see the module docstring).
    """
    text = _DASHES.sub(r" \1 ", text.replace("’", "'").replace("‘", "'"))
    words = text.split()
    tokens = []
    for number, word in enumerate(words):
        front = []
        while len(word) > 1 and word[0] in _OPENING:
            front.append(word[0])
            word = word[1:]
        back = []
        last = number == len(words) - 1
        while word:
            if word.endswith("...") and len(word) > 3:
                back.append("...")
                word = word[:-3]
            elif len(word) > 1 and word[-1] in _CLOSING:
                back.append(word[-1])
                word = word[:-1]
            elif last and word.endswith(".") and len(word) > 1:
                if _INITIALISM.fullmatch(word):
                    if not back:
                        back.append(".")  # the sentence's own full stop
                    break
                back.append(".")
                word = word[:-1]
            else:
                break
        tokens += [*front, word, *reversed(back)]
    return [token for token in tokens if token]


def ptb_words(text):
    """The words of `text` in Mikolov's PTB conventions, as a list."""
    words = []
    for token in _split_punctuation(text.lower()):
        if token in _PTB_DROPPED:
            continue
        if token == "%" or _NUMBER.fullmatch(token):
            words.append("N")
            continue
        if token == "cannot":
            words += ["can", "not"]
            continue
        clitic = _PTB_CLITIC.fullmatch(token)
        if clitic and not (clitic.group(2) == "'" and not token.endswith("s'")):
            words += [clitic.group(1), clitic.group(2)]
        else:
            words.append(token)
    return words


def to_ptb(text):
    """`text` in Mikolov's PTB word conventions (see the module docstring)."""
    return " ".join(ptb_words(text))


def to_ptb_characters(text):
    """`text` in PTB's character conventions: the `ptb` words spelled out."""
    return " _ ".join(" ".join(word) for word in ptb_words(text))


def _wikitext_word(token):
    token = re.sub(r"(?<=\d),(?=\d)", " @,@ ", token)
    token = re.sub(r"(?<=\d)\.(?=\d)", " @.@ ", token)
    token = re.sub(r"(?<=\w)-(?=\w)", " @-@ ", token)
    return re.sub(r"(?<=\w)'", " '", token)


def to_wikitext(text):
    """`text` in WikiText's conventions (see the module docstring)."""
    return " ".join(_wikitext_word(token) for token in _split_punctuation(text))


def to_text8(text):
    """`text` in text8's conventions: `a`-`z` and single spaces only."""
    text = re.sub(r"\d", lambda digit: f" {_DIGITS[int(digit.group())]} ", text)
    return " ".join(re.sub(r"[^a-z]+", " ", text.lower()).split())


def as_written(text):
    """The text as it is (`plain`, `characters`, `bytes`)."""
    return text


CONVENTIONS = {
    "ptb": to_ptb,
    "ptb_char": to_ptb_characters,
    "wikitext": to_wikitext,
    "text8": to_text8,
    "plain": as_written,
    "characters": as_written,
    "bytes": as_written,
}
# The convention of each corpus of `training.data.corpora.CORPORA`, by level
# (`None`: whatever the level).
CORPUS_CONVENTIONS = {
    "ptb": {"word": "ptb", "char": "ptb_char"},
    # At byte level the text is the same tokenized files', so `wikitext` too.
    "wikitext2": {"word": "wikitext", "byte": "wikitext"},
    "wikitext103": {"word": "wikitext", "byte": "wikitext"},
    "text8": {None: "text8"},
    "enwik8": {None: "bytes"},
    "tinyshakespeare": {None: "characters"},
}
# Text taken as written, by vocabulary level: a local file's corpus, whose
# conventions are unknown, or a vocabulary that names none.
AS_WRITTEN = {"word": "plain", "char": "characters", "byte": "bytes"}


def for_corpus(corpus, level):
    """The name of the conventions of the recipe corpus `corpus` at `level`."""
    if corpus.startswith(FILE_PREFIX):
        return AS_WRITTEN[level]
    if corpus not in CORPORA:
        raise ValueError(
            f"Unknown corpus {corpus!r}; expected one of: {', '.join(CORPORA)}, "
            "or file:PATH."
        )
    by_level = CORPUS_CONVENTIONS[corpus]
    return by_level.get(level, by_level.get(None))


def normalize(text, conventions):
    """`text` written in the conventions named `conventions` (`CONVENTIONS`)."""
    if conventions not in CONVENTIONS:
        raise ValueError(
            f"Unknown conventions {conventions!r}; expected one of: "
            f"{', '.join(CONVENTIONS)}."
        )
    return CONVENTIONS[conventions](text)
