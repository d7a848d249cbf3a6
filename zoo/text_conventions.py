"""Text conventions: natural text written as a vocabulary's corpus writes it.

A vocabulary holds its training corpus's tokens as that corpus writes them,
so other text (a prompt, a minimal pair: `"Susan revealed herself."`) must
be written the same way before its tokens can be found: on a PTB vocabulary
`herself.` is unknown, `herself` is not. Each convention maps text to text
whose tokens (whitespace-separated at word level, characters at character
level, bytes at byte level) are then looked up as the training text's were:

- `ptb`: Mikolov's Penn Treebank: lower case; clitics split as the Treebank
  does (`don't` -> `do n't`, `can't` -> `ca n't`, `John's` -> `john 's`,
  `boys'` -> `boys '`, `cannot` -> `can not`); punctuation dropped
  (`$`, `&`, `#` and abbreviations such as `mr.` stay); numbers and `%` as
  `N`; hyphenated words whole (`snack-food`).
- `ptb_char`: PTB's character files (`ptb.char.*.txt`): the `ptb` words,
  each character a token and `_` between words (`s u s a n _ r e v e a l e d`).
- `wikitext`: WikiText-2/103, read as words or as bytes: case kept;
  punctuation split off as tokens; a hyphen between word characters as
  `@-@`, a comma and a decimal point inside a number as `@,@` and `@.@`
  (`1 @,@ 000`, `3 @.@ 5`); a word split before its apostrophe (`don 't`,
  `game 's`, `O 'Brien`).
- `text8`: lower case, digits spelled out, every other character a space.
- `blimp`: the acceptability task's words: lower case, and every character
  that is neither a letter, a digit nor white space a token of its own
  (`didn't` -> `didn ' t`).
- `plain` (word-level text whose conventions are unknown, and the Dyck and
  recognition tasks' brackets, `(a (b b) a)`), `characters` and `bytes`:
  the text as it is.

Abbreviations: a word ending in `.` keeps it inside a sentence (`Mr.`),
which is how both corpora write abbreviations; at the end of a line the
`.` ends the sentence and is split off, except after an initialism
(`U.S.`), which keeps it (and, in `wikitext`, is followed by a `.`).

Each convention is TensorFlow string ops, line by line (a newline stays a
newline), so the one implementation serves Python callers (`write`) and the
graph of an exported SavedModel (`write_tensor`) alike.
"""

import functools
import re

import tensorflow as tf

# Split off the front and the back of a word, one character at a time.
_OPENING = '"([{`“$£€#'
_CLOSING = '")]}”,;:!?%'
_LETTER = r"[\pL\p{Nl}\p{No}]"
_INITIALISM = rf"(?:{_LETTER}\.){{2,}}"
_WORD_CHARACTER = r"[\pL\pN_]"
_SPACES = r"[\s\p{Z}\x{1c}-\x{1f}\x{85}]+"  # what Python's str.split splits at
# PTB drops these tokens (its text keeps `$`, `&`, `#`, `'` and `%` as `N`).
_PTB_DROPPED = set('"()[]{}`“”,;:!?.-') | {"...", "--", "–", "—", "``", "''"}
_NUMBER = r"[+-]?(?:\d+(?:[,.]\d+)*|\.\d+)"
_PTB_CLITIC = r"n't|'s|'re|'ve|'m|'ll|'d"
_DIGITS = "zero one two three four five six seven eight nine".split()


def _character_class(characters):
    return "[" + "".join(re.escape(character) for character in characters) + "]"


def _any_of(tokens):
    return "|".join(re.escape(token) for token in sorted(tokens))


def join_rows(ragged, separator):
    """Each row of a ragged string tensor joined with `separator` (TF ops).

    `tf.strings.reduce_join` on a ragged tensor leaves out the separators
    before a row's leading empty strings (`["", "a"]` joined with `"|"` is
    `"a"`; TensorFlow 2.21), which would drop blank lines.
    """
    ended = tf.strings.join([ragged.flat_values, separator])
    joined = tf.strings.reduce_join(ragged.with_flat_values(ended), axis=-1)
    return tf.strings.regex_replace(joined, f"{re.escape(separator)}\\z", "")


def split_words(lines):
    """The whitespace-separated words of each line: ragged `[lines, words]`."""
    lines = tf.strings.regex_replace(lines, _SPACES, " ")
    return tf.strings.split(tf.strings.strip(lines))


def _is_last(words):
    """Whether each word of ragged `words` is the last of its line."""
    rows = words.value_rowids()
    position = tf.range(tf.size(words.flat_values, out_type=tf.int64))
    position -= tf.gather(words.row_starts(), rows)
    return position == tf.gather(words.row_lengths(), rows) - 1


def _peel_back(words, last):
    """Each word without its closing punctuation, and that punctuation.

    One unit at a time from the end, as long as a character is left: `...`,
    then a closing character, then (only on a line's last word) a `.`,
    unless what is left is an initialism, which keeps its `.` (and gets a
    `.` token when nothing else was peeled). Returns `(words, back)`,
    `back` the peeled units in order, separated by spaces.
    """

    def peel(words, back, done):
        ellipsis = tf.strings.regex_full_match(words, r".+\.\.\.")
        closing = tf.strings.regex_full_match(words, ".+" + _character_class(_CLOSING))
        full_stop = last & tf.strings.regex_full_match(words, r".+\.")
        initialism = full_stop & tf.strings.regex_full_match(words, _INITIALISM)
        one = (closing | full_stop) & ~initialism & ~ellipsis
        unit = tf.where(
            ellipsis, "...", tf.strings.regex_replace(words, r"^.*(.)$", r"\1")
        )
        peeled = (ellipsis | one) & ~done
        rest = tf.where(
            ellipsis,
            tf.strings.regex_replace(words, r"\.\.\.$", ""),
            tf.strings.regex_replace(words, r".$", ""),
        )
        joined = tf.where(back == "", unit, tf.strings.join([unit, back], " "))
        lone_stop = initialism & ~done & (back == "")
        back = tf.where(peeled, joined, tf.where(lone_stop, ".", back))
        return tf.where(peeled, rest, words), back, done | ~peeled

    done = tf.zeros_like(last)
    words, back, _ = tf.while_loop(
        lambda words, back, done: tf.reduce_any(~done),
        peel,
        (words, tf.zeros_like(words), done),
    )
    return words, back


def split_punctuation(lines):
    """Words and punctuation tokens of each line: ragged `[lines, tokens]`.

    Apostrophes are made straight and dashes set apart; opening punctuation
    is split off the front of each word and closing punctuation off its
    back (a word's final `.` only at the end of its line: see the module
    docstring).
    """
    lines = tf.strings.regex_replace(lines, "[’‘]", "'")
    lines = tf.strings.regex_replace(lines, "(--+|–|—)", r" \1 ")
    words = split_words(lines)
    flat = words.flat_values
    opening = _character_class(_OPENING)
    front = tf.strings.regex_replace(flat, f"^({opening}*)(.+)$", r"\1")
    flat = tf.strings.regex_replace(flat, f"^({opening}*)(.+)$", r"\2")
    flat, back = _peel_back(flat, _is_last(words))
    front = tf.strings.regex_replace(front, "(.)", r"\1 ")
    pieces = tf.strings.join([front, flat, " ", back])
    joined = join_rows(words.with_flat_values(pieces), " ")
    return tf.strings.split(joined)


def ptb_words(lines):
    """The words of each line in Mikolov's PTB conventions: ragged `[lines, words]`."""
    tokens = split_punctuation(tf.strings.lower(lines, encoding="utf-8"))
    flat = tokens.flat_values
    dropped = tf.strings.regex_full_match(flat, _any_of(_PTB_DROPPED))
    number = (flat == "%") | tf.strings.regex_full_match(flat, _NUMBER)
    clitic = tf.strings.regex_full_match(flat, f"(.+?)({_PTB_CLITIC})|.+s'")
    split = tf.strings.regex_replace(flat, f"^(.+?)({_PTB_CLITIC}|')$", r"\1 \2")
    flat = tf.where(clitic, split, flat)
    flat = tf.where(flat == "cannot", "can not", flat)
    flat = tf.where(number, "N", flat)
    flat = tf.where(dropped, "", flat)
    joined = join_rows(tokens.with_flat_values(flat), " ")
    return tf.strings.split(joined)


def _ptb(lines):
    return join_rows(ptb_words(lines), " ")


def _ptb_characters(lines):
    words = ptb_words(lines)
    spelled = tf.strings.regex_replace(words.flat_values, "(.)", r" \1")
    spelled = tf.strings.strip(spelled)
    return join_rows(words.with_flat_values(spelled), " _ ")


def _wikitext(lines):
    tokens = split_punctuation(lines)
    flat = tokens.flat_values
    for pattern, rewrite in (
        (r"(\p{Nd}),(\p{Nd})", r"\1 @,@ \2"),
        (r"(\p{Nd})\.(\p{Nd})", r"\1 @.@ \2"),
        (f"({_WORD_CHARACTER})-({_WORD_CHARACTER})", r"\1 @-@ \2"),
    ):
        # Twice: a match takes the character after it, which may come
        # before the next one (`1,000,000`).
        flat = tf.strings.regex_replace(flat, pattern, rewrite)
        flat = tf.strings.regex_replace(flat, pattern, rewrite)
    flat = tf.strings.regex_replace(flat, f"({_WORD_CHARACTER})'", r"\1 '")
    return join_rows(tokens.with_flat_values(flat), " ")


def _text8(lines):
    for digit, name in enumerate(_DIGITS):
        lines = tf.strings.regex_replace(lines, str(digit), f" {name} ")
    lines = tf.strings.lower(lines, encoding="utf-8")
    return tf.strings.strip(tf.strings.regex_replace(lines, "[^a-z]+", " "))


def _blimp(lines):
    lines = tf.strings.lower(lines, encoding="utf-8")
    return tf.strings.regex_replace(lines, r"([^\pL\pN\s])", r" \1 ")


def _as_written(lines):
    return lines


CONVENTIONS = {
    "ptb": _ptb,
    "ptb_char": _ptb_characters,
    "wikitext": _wikitext,
    "text8": _text8,
    "blimp": _blimp,
    "plain": _as_written,
    "characters": _as_written,
    "bytes": _as_written,
}
# What each convention does, for messages (a clause).
DESCRIPTIONS = {
    "ptb": "lower case, numbers as N, most punctuation dropped, clitics split",
    "ptb_char": "the ptb words spelled out, _ between words",
    "wikitext": "punctuation split off, @-@ inside words, @,@ and @.@ in numbers",
    "text8": "lower-case letters a-z, digits spelled out",
    "blimp": "lower case, punctuation split off",
    "plain": "tokens separated by white space, as written",
    "characters": "the characters as written",
    "bytes": "the UTF-8 bytes as written",
}
# The token that stands for a space where a convention spells words out.
SPACE_TOKENS = {"ptb_char": "_"}
# Text taken as written, by vocabulary level: a local file's corpus, whose
# conventions are unknown, or a vocabulary that names none.
AS_WRITTEN = {"word": "plain", "char": "characters", "byte": "bytes"}


def check_conventions(conventions):
    """Raises a one-line `ValueError` unless `conventions` names a convention."""
    if conventions not in CONVENTIONS:
        raise ValueError(
            f"Unknown conventions {conventions!r}; expected one of: "
            f"{', '.join(CONVENTIONS)}."
        )


def write_tensor(texts, conventions):
    """A string tensor of texts written in `conventions`, line by line (TF ops)."""
    check_conventions(conventions)
    lines = tf.strings.split(tf.convert_to_tensor(texts, tf.string), "\n")
    write_lines = CONVENTIONS[conventions]
    if not tf.executing_eagerly():
        write_lines = _traced(conventions)  # one trace for all a graph's calls
    written = write_lines(lines.flat_values)
    return join_rows(lines.with_flat_values(written), "\n")


@functools.cache
def _traced(conventions):
    return tf.function(
        CONVENTIONS[conventions],
        input_signature=[tf.TensorSpec([None], tf.string)],
        autograph=False,
    )


def write(texts, conventions):
    """`texts` (a str, or a list of them) written in `conventions`, as str."""
    if isinstance(texts, str):
        return write([texts], conventions)[0]
    if not texts:
        check_conventions(conventions)
        return []
    written = write_tensor(list(texts), conventions).numpy()
    return [text.decode("utf-8") for text in written]
