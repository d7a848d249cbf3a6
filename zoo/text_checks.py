"""Text a model reads has no control characters: each is refused, never cut.

A NUL (U+0000) ended a string inside TensorFlow's string ops, so the text
after it was silently dropped: the model scored another text. Every control
character (Unicode category Cc: U+0000-U+001F, U+007F-U+009F) but tab,
newline and carriage return is refused in one line naming the character and
its position, in Python (`check_texts`) and inside a graph
(`checked_tensor`, what a SavedModel's text endpoints run), before the
text is written in a vocabulary's conventions. TensorFlow is imported only
by `checked_tensor`.
"""

ALLOWED = frozenset("\t\n\r")
_CONTROLS = [code for code in (*range(0x20), *range(0x7F, 0xA0))]
CONTROLS = tuple(code for code in _CONTROLS if chr(code) not in ALLOWED)
RULE = (
    "expected text without control characters (tab, newline and carriage "
    "return are allowed)"
)


def message(code, position, index, count):
    """The one line that names control character `code` at `position`."""
    where = f" of text {index}" if count > 1 else ""
    return (
        f"The text has the control character U+{code:04X} at character "
        f"{position}{where} (counted from 0); {RULE}."
    )


def check_texts(texts):
    """A one-line `ValueError` naming the first control character of the str
    `texts` (a list of them), or None."""
    for index, text in enumerate(texts):
        for position, character in enumerate(text):
            code = ord(character)
            if (code < 0x20 or 0x7F <= code < 0xA0) and character not in ALLOWED:
                raise ValueError(message(code, position, index, len(texts)))


def checked_tensor(texts):
    """The string tensor `texts` (a batch) once no text holds a control
    character (TF ops): else the graph fails with an `InvalidArgumentError`
    whose message names the character, its position and its text."""
    import tensorflow as tf

    texts = tf.convert_to_tensor(texts, tf.string)
    codes = tf.strings.unicode_decode(texts, "UTF-8", errors="replace")
    flat = codes.flat_values
    bad = tf.reduce_any(
        tf.equal(tf.expand_dims(flat, -1), tf.constant(CONTROLS, tf.int32)), axis=-1
    )
    first = tf.argmax(tf.concat([tf.cast(bad, tf.int32), [1]], axis=0))
    first = tf.minimum(first, tf.size(flat, out_type=tf.int64) - 1)
    first = tf.maximum(first, 0)
    rows = codes.value_rowids()
    row = tf.gather(tf.concat([rows, [0]], axis=0), first)
    starts = tf.concat([codes.row_starts(), [0]], axis=0)
    position = first - tf.gather(starts, row)
    code = tf.gather(tf.concat([flat, [0]], axis=0), first)
    hexa = tf.constant([f"{value:04X}" for value in range(0xA0)])
    text = tf.strings.join(
        [
            "The text has the control character U+",
            tf.gather(hexa, tf.minimum(code, 0x9F)),
            " at character ",
            tf.strings.as_string(position),
            " of text ",
            tf.strings.as_string(row),
            f" (counted from 0); {RULE}.",
        ]
    )
    check = tf.debugging.Assert(tf.logical_not(tf.reduce_any(bad)), [text])
    with tf.control_dependencies([check]):
        return tf.identity(texts)
