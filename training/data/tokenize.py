"""Word, character and byte tokenization with TensorFlow / tensorflow-text ops.

Levels:
    - `"word"`: `tensorflow_text.WhitespaceTokenizer` per line; with `add_eos`
      every line (blank ones too) ends with `<eos>`, as in Mikolov's PTB and the
      PyTorch WikiText pipeline. The trailing newline of the file does not start
      a line.
    - `"char"`: Unicode characters (`tf.strings.unicode_split`). With
      `add_eos` the newline of each line becomes `<eos>`; without it a newline
      is the character `"\\n"`.
    - `"byte"`: the raw bytes, ids 0 .. 255 (`tf.io.decode_raw`); no lookup
      and no out-of-vocabulary tokens.

A `Vocabulary` is built from the training split only and holds the level, so
`Vocabulary.to_json()` / `Vocabulary.from_json()` reproduce the whole text ->
ids mapping for evaluation and export; it also names the spelling conventions
of its corpus (`zoo.text_conventions`, `training.data.conventions`), in which
natural text is written before it is tokenized: `Vocabulary.tokenizer()` is
the `zoo.tokenizer.Tokenizer` that does both, in Python and inside a
SavedModel. `encode` reads text already in the conventions (a corpus's
splits).
"""

from __future__ import annotations

import collections
import dataclasses
import json

import numpy as np
import tensorflow as tf

from zoo.tokenizer import SpecialTokens, Tokenizer, index_tokens

UNK = "<unk>"
EOS = "<eos>"
LEVELS = ("word", "char", "byte")


def _check_level(level):
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}; received {level!r}.")


def split_lines(text):
    """Lines of a scalar string tensor; a final newline does not start a line."""
    text = tf.strings.regex_replace(text, r"\n\z", "")
    return tf.strings.split(text, "\n")


def tokenize(text, level, add_eos=False, eos_token=EOS):
    """Tokens of a scalar string tensor as a 1-D string tensor (word or char).

    Args:
        text: scalar `tf.string` tensor (or Python str/bytes).
        level: `"word"` or `"char"` (bytes need no string tokens).
        add_eos: end every line with `eos_token`.
        eos_token: the end-of-line token.
    """
    _check_level(level)
    if level == "byte":
        raise ValueError("level='byte' has no string tokens; use Tokenizer or encode")
    text = tf.convert_to_tensor(text, dtype=tf.string)
    if level == "char" and not add_eos:
        return tf.strings.unicode_split(text, "UTF-8")
    lines = split_lines(text)
    if level == "word":
        # Imported here: its import took 0.23 s of every command that reads
        # a vocabulary (`python -m training.generate` among them).
        import tensorflow_text as tf_text

        tokens = tf_text.WhitespaceTokenizer().tokenize(lines)  # ragged (lines, words)
    else:
        tokens = tf.strings.unicode_split(lines, "UTF-8")  # ragged (lines, chars)
    if add_eos:
        eos = tf.fill(tf.stack([tf.shape(lines)[0], 1]), eos_token)  # (lines, 1)
        tokens = tf.concat([tokens, tf.RaggedTensor.from_tensor(eos)], axis=1)
    return tokens.flat_values


def count_words(text):
    """The number of words in `text` (str or UTF-8 bytes) as the word level counts.

    Whitespace-separated tokens plus one `<eos>` per line, blank lines too:
    the length of a word-level, `add_eos` encoding of `text` (WikiText-2's
    test file: 245,569). The word count Krause et al. (2016, eq. 23) divide
    a byte-level model's bits by.
    """
    return int(tokenize(text, "word", add_eos=True).shape[0])


@dataclasses.dataclass
class EncodedText:
    """Ids of one split and how many tokens were out of vocabulary (now <unk>)."""

    ids: np.ndarray
    num_oov: int

    def __len__(self):
        return len(self.ids)


class Vocabulary(SpecialTokens):
    """Token <-> id mapping plus the tokenization settings it was built with.

    Ids are positions in `tokens`: the special tokens first (`<unk>`, then
    `<eos>` when `add_eos`), then the training tokens by decreasing count
    (ties in code-point order). There is no padding id; byte-level
    vocabularies are the 256 byte values.

    Args:
        tokens: list of token strings (ignored for `level="byte"`).
        level: `"word"`, `"char"` or `"byte"`.
        add_eos: whether lines end with `eos_token`.
        unk_token: id for out-of-vocabulary tokens, or None (then an OOV token
            is always an error).
        eos_token: end-of-line token.
        conventions: the name of the training corpus's spelling conventions
            (`zoo.text_conventions.CONVENTIONS`), or None (not a text:
            read as written at its level).

    Example:
    >>> vocab = Vocabulary.build("a b b\\nb c\\n", level="word", add_eos=True)
    >>> vocab.tokens
    ['<unk>', '<eos>', 'b', 'a', 'c']
    >>> vocab.encode("a b\\n").ids.tolist()
    [3, 2, 1]
    """

    def __init__(
        self,
        tokens,
        level="word",
        add_eos=False,
        unk_token=UNK,
        eos_token=EOS,
        conventions=None,
    ):
        _check_level(level)
        self.level = level
        self.conventions = conventions
        self.add_eos = bool(add_eos) and level != "byte"
        self.unk_token = None if level == "byte" else unk_token
        self.eos_token = eos_token
        if level == "byte":
            self.tokens = None
            self._index = None
            return
        self.tokens = [str(token) for token in tokens]
        eos = eos_token if self.add_eos else None
        self._index = index_tokens(self.tokens, self.unk_token, eos)

    @classmethod
    def build(
        cls,
        text,
        level="word",
        add_eos=False,
        *,
        max_size=None,
        min_count=1,
        unk_token=UNK,
        eos_token=EOS,
        conventions=None,
    ):
        """Builds a vocabulary from training text (str, bytes or tf string).

        `max_size` keeps the most frequent tokens (special tokens included);
        tokens seen fewer than `min_count` times are left out (they become
        `<unk>`).
        """
        _check_level(level)
        if level == "byte":
            return cls(None, level="byte", conventions=conventions)
        counts = collections.Counter(
            tokenize(text, level, add_eos, eos_token).numpy().tolist()
        )
        specials = [t for t in (unk_token, eos_token if add_eos else None) if t]
        ranked = sorted(
            (
                (token.decode("utf-8"), count)
                for token, count in counts.items()
                if count >= min_count
            ),
            key=lambda item: (-item[1], item[0]),
        )
        tokens = specials + [t for t, _ in ranked if t not in specials]
        if max_size is not None:
            tokens = tokens[:max_size]
        return cls(tokens, level, add_eos, unk_token, eos_token, conventions)

    def __len__(self):
        return 256 if self.level == "byte" else len(self.tokens)

    def id_of(self, token):
        return self._index[token]

    def encode(self, text, on_oov="error", split="text"):
        """Ids of `text` as an `EncodedText`.

        Args:
            text: str, bytes or scalar string tensor.
            on_oov: `"error"` raises ValueError naming the first unknown token;
                `"unk"` maps unknown tokens to `<unk>` and counts them.
            split: the name used in error messages.
        """
        if on_oov not in ("error", "unk"):
            raise ValueError(f"on_oov must be 'error' or 'unk'; received {on_oov!r}.")
        if self.level == "byte":
            if isinstance(text, str):
                text = text.encode("utf-8")
            elif isinstance(text, tf.Tensor):
                text = text.numpy()
            return EncodedText(np.frombuffer(text, dtype=np.uint8).astype(np.int32), 0)
        tokens = tokenize(text, self.level, self.add_eos, self.eos_token)
        ids = self._table().lookup(tokens).numpy()
        unknown = ids < 0
        num_oov = int(unknown.sum())
        if num_oov:
            first = tokens.numpy()[int(np.argmax(unknown))].decode("utf-8", "replace")
            if on_oov == "error" or self.unk_token is None:
                how = (
                    f"pass on_oov='unk' to map them to {self.unk_token}"
                    if self.unk_token is not None
                    else "this vocabulary has no unknown-token entry to map them to"
                )
                raise ValueError(
                    f"{split}: {num_oov} tokens are not in the {len(self)}-token "
                    f"vocabulary (first: {first!r}); expected only vocabulary "
                    f"tokens ({how})"
                )
            ids = np.where(unknown, self.unk_id, ids)
        return EncodedText(ids.astype(np.int32), num_oov)

    def decode(self, ids, separator=None):
        """Text of `ids`: words joined by spaces, characters by nothing."""
        ids = np.asarray(ids).tolist()
        if self.level == "byte":
            return bytes(ids)
        if separator is None:
            separator = " " if self.level == "word" else ""
        return separator.join(self.tokens[i] for i in ids)

    def tokenizer(self):
        """The `zoo.tokenizer.Tokenizer` of natural text for this vocabulary.

        In the vocabulary's conventions, else the text as written.
        """
        return Tokenizer.from_vocabulary(json.loads(self.to_json()))

    def _table(self, default=-1):
        keys = tf.constant(self.tokens, dtype=tf.string)
        values = tf.range(len(self.tokens), dtype=tf.int64)
        return tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(keys, values), default_value=default
        )

    def to_json(self):
        """The mapping and its settings as a JSON string."""
        return json.dumps(
            {
                "level": self.level,
                "add_eos": self.add_eos,
                "unk_token": self.unk_token,
                "eos_token": self.eos_token,
                "conventions": self.conventions,
                "tokens": self.tokens,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text):
        """Inverse of `to_json`."""
        return cls.from_config(json.loads(text))

    @classmethod
    def from_config(cls, config):
        """The vocabulary of `to_json`'s dict (what `PresetLoader.vocabulary` reads)."""
        return cls(
            config["tokens"],
            level=config["level"],
            add_eos=config["add_eos"],
            unk_token=config["unk_token"],
            eos_token=config["eos_token"],
            conventions=config["conventions"],
        )

    def __eq__(self, other):
        return isinstance(other, Vocabulary) and self.to_json() == other.to_json()
