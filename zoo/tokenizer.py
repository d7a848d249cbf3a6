"""Natural text to token ids and back, in the conventions of a vocabulary.

As keras-hub's tokenizers are (`tokenizer("text")` -> ids,
`tokenizer.detokenize(ids)` -> text), with the vocabulary's own spelling
conventions (`zoo.text_conventions`) applied first: a PTB character model
reads "The company said" as `t h e _ c o m p a n y _ s a i d`. A token the
vocabulary lacks after that is a one-line `ValueError` naming it, unless
`on_unknown="unk"` asks for `<unk>`; so is a control character (a NUL
first of all: `zoo.text_checks`), which is never cut or dropped. The same
TensorFlow ops tokenize in Python and inside an exported SavedModel
(`id_tensor`), where an unknown token fails with the same message.

TensorFlow is imported with this module, which `import zoo` does not import
(`zoo.from_preset(...).tokenizer` does), so zoo on another Keras backend
needs TensorFlow only to tokenize text.
"""

import codecs

import tensorflow as tf

from zoo import text_checks, text_conventions

LEVELS = ("word", "char", "byte")
ON_UNKNOWN = ("error", "unk")
SHOWN_UNKNOWN = 10  # the most unknown tokens a message names


class SpecialTokens:
    """The ids of a vocabulary's special tokens (what `Tokenizer` shares with
    `training.data.tokenize.Vocabulary`): it has `tokens`, `unk_token`,
    `eos_token`, `add_eos` and the index `_index` (`index_tokens`)."""

    @property
    def unk_id(self):
        return None if self.unk_token is None else self._index[self.unk_token]

    @property
    def eos_id(self):
        return self._index[self.eos_token] if self.add_eos else None


def index_tokens(tokens, unk_token=None, eos_token=None):
    """`{token: id}` of a vocabulary's `tokens`, checked to be unique and to
    hold `unk_token` and `eos_token` (each None where the vocabulary has none)."""
    index = {token: i for i, token in enumerate(tokens)}
    if len(index) != len(tokens):
        raise ValueError("vocabulary tokens must be unique; received duplicates.")
    for option, token in (("unk_token", unk_token), ("eos_token", eos_token)):
        if token is not None and token not in index:
            raise ValueError(f"{option} {token!r} is not in the tokens.")
    return index


class Tokenizer(SpecialTokens, tf.Module):
    """Text -> token ids -> text, in the conventions of a vocabulary's corpus.

    A newline of the text is the vocabulary's end-of-line token when it has
    one (`add_eos`); `tokenize` adds no token of its own.

    Args:
        tokens: the vocabulary: id i is `tokens[i]` (None for `level="byte"`,
            whose ids are the bytes).
        level: `"word"` (tokens separated by white space), `"char"` (each
            character a token) or `"byte"` (each UTF-8 byte).
        add_eos: whether the vocabulary ends every line with `eos_token`.
        unk_token: the token an unknown one is read as with
            `on_unknown="unk"`, or None (then unknown tokens are always an
            error).
        eos_token: the end-of-line token.
        conventions: a name of `zoo.text_conventions.CONVENTIONS`, or None
            for the text as written at `level`.

    Example:

    >>> tokenizer = zoo.from_preset("mlstm_ptb_char").tokenizer
    >>> tokenizer("It's 5%.")
    [8, 4, 2, 29, 9, 2, 27, 2, 27]
    >>> tokenizer.detokenize([8, 4, 2, 29, 9, 2, 27, 2, 27])
    "it 's N N"
    """

    def __init__(
        self,
        tokens,
        level="word",
        add_eos=False,
        unk_token=None,
        eos_token="<eos>",
        conventions=None,
        name=None,
    ):
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}; received {level!r}.")
        if conventions is None:
            conventions = text_conventions.AS_WRITTEN[level]
        text_conventions.check_conventions(conventions)
        super().__init__(name=name)
        self.level = level
        self.conventions = conventions
        self.add_eos = bool(add_eos) and level != "byte"
        self.unk_token = None if level == "byte" else unk_token
        self.eos_token = eos_token
        self.tokens = None if level == "byte" else [str(token) for token in tokens]
        if self.tokens is None:
            return
        eos = eos_token if self.add_eos else None
        self._index = index_tokens(self.tokens, self.unk_token, eos)
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(self.tokens, tf.string),
                tf.range(len(self.tokens), dtype=tf.int64),
            ),
            default_value=-1,
        )

    @classmethod
    def from_vocabulary(cls, vocabulary):
        """The tokenizer of a `vocabulary.json` dict (a preset's, a run's).

        Its `conventions` (None: the text as written at its level).
        """
        return cls(
            vocabulary["tokens"],
            level=vocabulary["level"],
            add_eos=vocabulary.get("add_eos", False),
            unk_token=vocabulary.get("unk_token"),
            eos_token=vocabulary.get("eos_token", "<eos>"),
            conventions=vocabulary["conventions"],
        )

    def get_config(self):
        return {
            "tokens": self.tokens,
            "level": self.level,
            "add_eos": self.add_eos,
            "unk_token": self.unk_token,
            "eos_token": self.eos_token,
            "conventions": self.conventions,
        }

    def vocabulary_size(self):
        return 256 if self.level == "byte" else len(self.tokens)

    def id_to_token(self, token_id):
        self._check_ids([token_id])
        return str(token_id) if self.level == "byte" else self.tokens[token_id]

    def token_to_id(self, token):
        if self.level == "byte" or token not in self._index:
            raise ValueError(f"{token!r} is not a token of this vocabulary.")
        return self._index[token]

    def write(self, texts):
        """`texts` (a str or a list of them) in the vocabulary's conventions."""
        return text_conventions.write(texts, self.conventions)

    def tokenize(self, texts, on_unknown="error"):
        """The ids of a str (a list of int), or of each str of a list.

        Args:
            texts: a str or a list of str, natural text.
            on_unknown: `"error"` (a one-line `ValueError` naming the tokens
                the vocabulary lacks) or `"unk"` (they are read as the
                vocabulary's `<unk>`; still an error where it has none).
        """
        if on_unknown not in ON_UNKNOWN:
            raise ValueError(
                f"on_unknown must be one of {ON_UNKNOWN}; received {on_unknown!r}."
            )
        if isinstance(texts, str):
            return self.tokenize([texts], on_unknown)[0]
        if not texts:
            return []
        text_checks.check_texts(texts)
        if self.level == "byte":
            return [list(text.encode("utf-8")) for text in self.write(list(texts))]
        tokens = self.token_tensor(list(texts)).to_list()
        tokens = [[token.decode("utf-8") for token in row] for row in tokens]
        unknown = {t: None for row in tokens for t in row if t not in self._index}
        if unknown and (on_unknown == "error" or self.unk_token is None):
            shown = list(unknown)[:SHOWN_UNKNOWN]
            raise ValueError(self.unknown_message(", ".join(map(quoted, shown))))
        return [[self._index.get(t, self.unk_id) for t in row] for row in tokens]

    __call__ = tokenize

    def _written_tensor(self, texts):
        return text_conventions.write_tensor(texts, self.conventions)

    def token_tensor(self, texts, end_lines=False):
        """The tokens of a string tensor of texts: ragged `[texts, tokens]` (TF ops).

        With `end_lines` every line ends with the end-of-line token (a final
        newline does not start a line), as a line of the training text does.
        """
        texts = tf.convert_to_tensor(texts, tf.string)
        if end_lines and self.add_eos:
            texts = tf.strings.regex_replace(texts, r"\n?\z", "\n")
        written = self._written_tensor(texts)
        if not self.add_eos:
            if self.level == "char":
                return tf.strings.unicode_split(written, "UTF-8")
            return text_conventions.split_words(written)
        lines = tf.strings.split(written, "\n")  # ragged [texts, lines]
        if self.level == "char":
            tokens = tf.strings.unicode_split(lines.flat_values, "UTF-8")
        else:
            tokens = text_conventions.split_words(lines.flat_values)
        eos = tf.fill([tf.shape(lines.flat_values)[0], 1], self.eos_token)
        tokens = tf.concat([tokens, eos], axis=1)  # every line ends with eos
        tokens = lines.with_flat_values(tokens).merge_dims(1, 2)
        return tokens[:, :-1]  # but the last: it ends the text, not a line

    def id_tensor(self, texts, on_unknown="error", end_lines=False, hint=None):
        """int32 ids of a string tensor of texts: ragged `[texts, ids]` (TF ops).

        For graphs (a SavedModel's text endpoint): an unknown token with
        `on_unknown="error"` fails an assertion whose message is
        `unknown_message`'s (with `hint`), naming the tokens; a control
        character fails one naming it and its position (`zoo.text_checks`).
        """
        texts = text_checks.checked_tensor(texts)  # no control characters
        if self.level == "byte":
            written = tf.strings.bytes_split(self._written_tensor(texts))
            ids = tf.io.decode_raw(written.flat_values, tf.uint8)[:, 0]
            return written.with_flat_values(tf.cast(ids, tf.int32))
        tokens = self.token_tensor(texts, end_lines)
        ids = self.table.lookup(tokens)
        if on_unknown == "unk" and self.unk_token is not None:
            ids = tf.where(ids < 0, tf.cast(self.unk_id, tf.int64), ids)
        else:
            unknown = tf.boolean_mask(tokens.flat_values, ids.flat_values < 0)
            unknown, _ = tf.unique(unknown)  # in the order they come
            shown = tf.strings.reduce_join(
                tf.strings.join(["`", unknown[:SHOWN_UNKNOWN], "`"]), separator=", "
            )
            before, after = self.unknown_message(None, hint).split("{}")
            message = tf.strings.join([before, shown, after])
            check = tf.debugging.Assert(tf.size(unknown) == 0, [message], summarize=1)
            with tf.control_dependencies([check]):
                ids = tf.identity(ids)
        return tf.cast(ids, tf.int32)

    def unknown_message(self, shown, hint=None):
        """The one line that says which tokens (`shown`, a str) cannot be read.

        `hint` says how to read them as `<unk>` instead (default: the
        `on_unknown` option). With `shown=None`, the line has `{}` where
        they go (for graphs). The line has no quotes: a graph's assertion
        would print them escaped.
        """
        unit = "token"
        if self.level == "char" or self.conventions in text_conventions.SPACE_TOKENS:
            unit = "character"
        if self.unk_token is None:
            hint = "the vocabulary has no unknown token to read them as"
        elif hint is None:
            hint = f"or on_unknown=unk to read them as {self.unk_token}"
        description = text_conventions.DESCRIPTIONS[self.conventions]
        return (
            f"The text has {unit}s that are not in the vocabulary of this model: "
            f"{'{}' if shown is None else shown} (once written in its "
            f"{self.conventions} conventions: {description}); expected only the "
            f"{unit}s of its {self.vocabulary_size()}-token vocabulary ({hint})."
        )

    def detokenize(self, ids):
        """The text of `ids` (a list of int, or a list of such lists)."""
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        if ids and hasattr(ids[0], "__iter__"):  # a batch
            return [self.detokenize(row) for row in ids]
        return "".join(self.pieces(ids))

    def pieces(self, ids, continuing=False):
        """Yields the text of each id of the iterable `ids` as it comes.

        `"".join(pieces(ids)) == detokenize(ids)`; with `continuing` the ids
        follow text (a prompt), so a first word gets its space. An
        end-of-line token is a newline; at word level tokens are separated
        by spaces, except where a convention spells words out with a space
        token (PTB's `_`).
        """
        if self.level == "byte":
            # A character's bytes are text once it is whole.
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            for token_id in ids:
                self._check_ids([token_id])
                yield decoder.decode(bytes([token_id]))
            yield decoder.decode(b"", final=True)
            return
        space = text_conventions.SPACE_TOKENS.get(self.conventions)
        separated = self.level == "word" and space is None
        line_start = not continuing
        for token_id in ids:
            self._check_ids([token_id])
            token = self.tokens[token_id]
            if token_id == self.eos_id:
                line_start = True
                yield "\n"
                continue
            before = " " if separated and not line_start else ""
            line_start = False
            yield " " if token == space else before + token

    def _check_ids(self, ids):
        size = self.vocabulary_size()
        for token_id in ids:
            if isinstance(token_id, bool) or not 0 <= int(token_id) < size:
                raise ValueError(
                    f"Token id {token_id!r} is not in this vocabulary; expected ids "
                    f"in [0, {size})."
                )


def quoted(token):
    return f"`{token}`"
