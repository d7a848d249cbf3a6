"""m-bounded Dyck-k languages (Hewitt et al., 2020): generator, framing and splits.

Dyck-(k, m) is the language of balanced strings over k bracket types whose
nesting depth never exceeds m. Strings are sampled from Hewitt's probabilistic
automaton: with an empty stack END has probability 1/2 and each open bracket
1/(2k); with 0 < depth < m the matching close has probability 1/2 and each open
bracket 1/(2k); at depth m the matching close is forced. An END drawn before the
minimum length is redrawn; a string that grows over the maximum length is
rejected whole and sampling starts again. `training.data.dyck_oracle` gives
the exact next-token distribution of the strings this draws (a split's floor).

Token-id layout (shared with `training.data.languages`)::

    0             PAD_ID    padding (masked everywhere)
    1             START_ID  prepended to every string
    2             END_ID    ends every string (predicted by the model)
    3 .. 2+k      open brackets of types 0 .. k-1
    3+k .. 2+2k   close brackets of types 0 .. k-1

A string is stored as an int32 array of bracket ids followed by END (START is
added by `frame`). Its *length* is the number of tokens including END, as in
Hewitt's data files; token budgets count the same tokens.
"""

from __future__ import annotations

import dataclasses

import numpy as np

PAD_ID = 0
START_ID = 1
END_ID = 2
FIRST_BRACKET_ID = 3


def _check_k_m(k, m=None):
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(
            f"k (number of bracket types) must be an integer >= 1; received {k!r}."
        )
    if m is not None and (not isinstance(m, (int, np.integer)) or m < 1):
        raise ValueError(f"m (maximum depth) must be an integer >= 1; received {m!r}.")


def open_id(bracket_type):
    """Token id of the open bracket of type `bracket_type` (0 .. k-1)."""
    return FIRST_BRACKET_ID + bracket_type


def close_id(bracket_type, k):
    """Token id of the close bracket of type `bracket_type` (0 .. k-1)."""
    return FIRST_BRACKET_ID + k + bracket_type


def vocabulary_size(k):
    """Number of token ids for Dyck-k, padding included: 3 + 2k."""
    _check_k_m(k)
    return FIRST_BRACKET_ID + 2 * k


def token_names(k):
    """Names of the ids 0 .. 2+2k, in Hewitt's spelling (`(a`, `a)`, ...)."""
    _check_k_m(k)
    letters = [chr(ord("a") + i) if i < 26 else f"t{i}" for i in range(k)]
    return (
        ["<pad>", "START", "END"]
        + [f"({name}" for name in letters]
        + [f"{name})" for name in letters]
    )


def hewitt_max_length(m):
    """Longest train/dev string in Hewitt et al.'s splits: 8m(m-2) + 60 tokens."""
    _check_k_m(1, m)
    return 8 * m * (m - 2) + 60


def is_dyck(tokens, k, m=None):
    """Exact recogniser: True if `tokens` (bracket ids, optional END) is in Dyck-(k, m).

    With `m=None` the depth is unbounded (plain Dyck-k).
    """
    _check_k_m(k, m)
    tokens = list(np.asarray(tokens).tolist())
    if tokens and tokens[-1] == END_ID:
        tokens = tokens[:-1]
    stack = []
    for token in tokens:
        kind = token - FIRST_BRACKET_ID
        if 0 <= kind < k:
            stack.append(kind)
            if m is not None and len(stack) > m:
                return False
        elif k <= kind < 2 * k:
            if not stack or stack.pop() != kind - k:
                return False
        else:
            return False
    return not stack


class _Uniforms:
    """Buffered uniform draws from a numpy Generator (one Python float per call)."""

    def __init__(self, rng, block=1 << 16):
        self.rng = rng
        self.block = block
        self.values = []
        self.index = 0

    def next(self):
        if self.index >= len(self.values):
            self.values = self.rng.random(self.block).tolist()
            self.index = 0
        value = self.values[self.index]
        self.index += 1
        return value


def _sample_string(uniforms, k, m, min_length, max_length):
    """One string (list of ids ending with END) or None when it grew too long."""
    first_close = FIRST_BRACKET_ID + k
    two_k = 2 * k
    tokens = []
    stack = []
    # A string of n brackets has length n + 1 (END); it is over the maximum as
    # soon as n >= max_length.
    while len(tokens) < max_length:
        depth = len(stack)
        if depth == m:
            tokens.append(first_close + stack.pop())
            continue
        u = uniforms.next()
        if u < 0.5:
            if depth == 0:
                if len(tokens) >= min_length:
                    tokens.append(END_ID)
                    return tokens
                continue  # END before the minimum length: redraw
            tokens.append(first_close + stack.pop())
        else:
            kind = min(int((u - 0.5) * two_k), k - 1)
            stack.append(kind)
            tokens.append(FIRST_BRACKET_ID + kind)
    return None


def check_length_range(k, m, min_length, max_length):
    """A one-line `ValueError` when the lengths hold no Dyck-(k, m) string.

    `min_length` and `max_length` as `sample_dyck` takes them (`max_length`
    None: `hewitt_max_length(m)`).
    """
    if max_length is None:
        max_length = hewitt_max_length(m)
    # n brackets (n even, n >= min_length, n >= 2) plus END: the shortest
    # string has length n + 1.
    fewest = max(min_length, 1)
    fewest += fewest % 2
    if max_length < fewest + 1:
        raise ValueError(
            f"length range [{min_length}, {max_length}] holds no Dyck-({k}, {m}) "
            "string; expected a range containing an odd length (even number of "
            "brackets plus END)"
        )


def sample_dyck(
    k,
    m,
    *,
    num_sequences=None,
    num_tokens=None,
    min_length=1,
    max_length=None,
    seed=0,
):
    """Samples Dyck-(k, m) strings from Hewitt et al.'s automaton.

    Args:
        k: number of bracket types, >= 1.
        m: maximum nesting depth, >= 1.
        num_sequences: number of strings to return. Exactly one of
            `num_sequences` and `num_tokens` is given.
        num_tokens: sample until the strings hold at least this many tokens
            (END included), as Hewitt's `sample_count`.
        min_length: the fewest brackets before END: an END drawn earlier is
            redrawn, as in Hewitt's sampler (`len(string) < length_min`
            there counts the tokens before END). The default 1 excludes the
            empty string, so the shortest string is two brackets and END
            (length 3). Hewitt's length bounds then apply to the whole
            string, END included: a string of n brackets has length n + 1.
        max_length: longest length in tokens (END included); longer strings
            are rejected whole. Defaults to `hewitt_max_length(m)`.
        seed: seed of `numpy.random.default_rng`, or a `numpy.random.Generator`.

    Returns:
        A list of int32 arrays, each the bracket ids of one string then END.

    Example:
    >>> strings = sample_dyck(2, 4, num_sequences=3, seed=0)
    >>> [int(s[-1]) for s in strings]
    [2, 2, 2]
    """
    _check_k_m(k, m)
    if max_length is None:
        max_length = hewitt_max_length(m)
    if (num_sequences is None) == (num_tokens is None):
        raise ValueError(
            "sample_dyck needs exactly one of num_sequences and num_tokens; received "
            f"num_sequences={num_sequences!r}, num_tokens={num_tokens!r}"
        )
    budget = num_sequences if num_sequences is not None else num_tokens
    if budget < 0:
        raise ValueError(
            f"the number of sequences/tokens must be >= 0; received {budget}."
        )
    check_length_range(k, m, min_length, max_length)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    uniforms = _Uniforms(rng)
    strings = []
    total = 0
    attempts = 0
    while (len(strings) if num_sequences is not None else total) < budget:
        tokens = _sample_string(uniforms, k, m, min_length, max_length)
        attempts += 1
        if tokens is None:
            if attempts > 1000 and len(strings) < attempts // 1000:
                raise ValueError(
                    f"length range [{min_length}, {max_length}] for Dyck-({k}, {m}): "
                    f"fewer than 1 in 1000 of {attempts} samples fit; expected a "
                    "range the automaton reaches"
                )
            continue
        strings.append(np.asarray(tokens, dtype=np.int32))
        total += len(tokens)
    return strings


SPLIT_NAMES = ("train", "dev", "test")


def split_length_ranges(m, train_min_length=1, train_max_length=None):
    """`{"train", "dev", "test"}` -> `(min_length, max_length)` of `dyck_splits`.

    Train and dev: `train_min_length` and `train_max_length` (None:
    `hewitt_max_length(m)`); test: Hewitt's, at least `8m(m-2)+61`
    brackets and lengths up to twice `8m(m-2)+60`, whatever the training
    range.
    """
    longest = hewitt_max_length(m)
    train = (
        train_min_length,
        longest if train_max_length is None else train_max_length,
    )
    return {"train": train, "dev": train, "test": (longest + 1, 2 * longest)}


def dyck_splits(
    k,
    m,
    *,
    train=2_000_000,
    dev=20_000,
    test=100_000,
    unit="tokens",
    train_min_length=1,
    train_max_length=None,
    seed=0,
):
    """Hewitt et al.'s train/dev/test splits of Dyck-(k, m).

    Train and dev strings have at least `train_min_length` brackets before
    END and lengths (END included) up to `train_max_length`, by default
    `8m(m-2)+60`; test strings at least `8m(m-2)+61` brackets and lengths
    up to twice `8m(m-2)+60` (length generalisation at the same m), as
    Hewitt's configurations set them (`split_length_ranges`). Each split has
    its own random stream derived from `seed`, so the training range changes
    neither the test strings nor, for one range, the others.

    Args:
        k, m: the language.
        train, dev, test: split sizes, counted in `unit`.
        unit: `"tokens"` (Hewitt's token budgets) or `"sequences"`.
        train_min_length: fewest brackets before END in train/dev strings
            (see `sample_dyck`'s `min_length`: an END drawn earlier is
            redrawn).
        train_max_length: longest train/dev length, END included (longer
            strings are rejected whole); None: `hewitt_max_length(m)`.
        seed: integer seed.

    Returns:
        A dict `{"train": [...], "dev": [...], "test": [...]}` of string lists as
        returned by `sample_dyck`.
    """
    _check_k_m(k, m)
    if unit not in ("tokens", "sequences"):
        raise ValueError(f"unit must be 'tokens' or 'sequences'; received {unit!r}.")
    ranges = split_length_ranges(m, train_min_length, train_max_length)
    sizes = {"train": train, "dev": dev, "test": test}
    streams = np.random.SeedSequence(seed).spawn(len(SPLIT_NAMES))
    splits = {}
    for name, stream in zip(SPLIT_NAMES, streams, strict=True):
        size_key = "num_tokens" if unit == "tokens" else "num_sequences"
        splits[name] = sample_dyck(
            k,
            m,
            min_length=ranges[name][0],
            max_length=ranges[name][1],
            seed=np.random.default_rng(stream),
            **{size_key: sizes[name]},
        )
    return splits


@dataclasses.dataclass
class DyckArrays:
    """Padded int32 arrays for a list of Dyck strings, shape `(num_strings, T)`.

    Position t reads `inputs[:, t]` and predicts `targets[:, t]`.

    Attributes:
        inputs: START then the brackets; PAD_ID after the end.
        targets: the brackets then END (the next token at every position).
        mask: float32, 1 where `targets` is a real token, 0 on padding.
        close_targets: where the stack after reading `inputs[:, :t+1]` is
            non-empty, the id of the close bracket matching its top; else 0.
        distances: at those positions, (t + 1) minus the position of the open
            bracket on top in the framed sequence (START at 0): the closing
            distance when the next token is that close; else 0.
        close_labels: the Dyck-RNN task: where `targets[:, t]` is a close
            bracket, its type 0 .. k-1; else 0.
        close_weights: float32, 1 exactly where `close_labels` is defined.
    """

    inputs: np.ndarray
    targets: np.ndarray
    mask: np.ndarray
    close_targets: np.ndarray
    distances: np.ndarray
    close_labels: np.ndarray
    close_weights: np.ndarray


def annotate_targets(targets, k):
    """Stack annotations computed from the next-token targets alone.

    Args:
        targets: int array `(N, T)` of next-token ids (brackets, END, PAD).
        k: number of bracket types.

    Returns:
        `(close_targets, distances)`, int32 arrays `(N, T)` as in `DyckArrays`.
    """
    _check_k_m(k)
    targets = np.asarray(targets)
    close_targets = np.zeros(targets.shape, dtype=np.int32)
    distances = np.zeros(targets.shape, dtype=np.int32)
    first_close = FIRST_BRACKET_ID + k
    for row, sequence in enumerate(targets.tolist()):
        stack = []  # (type, position in the framed sequence)
        # Before predicting targets[t] the model has read START and targets[:t];
        # targets[t] is at framed position t + 1.
        for t, token in enumerate(sequence):
            if stack:
                kind, position = stack[-1]
                close_targets[row, t] = first_close + kind
                distances[row, t] = t + 1 - position
            if token == PAD_ID or token == END_ID:
                break
            kind = token - FIRST_BRACKET_ID
            if 0 <= kind < k:
                stack.append((kind, t + 1))
            elif k <= kind < 2 * k and stack:
                stack.pop()
    return close_targets, distances


def _padded_length(strings, length, caller, unit):
    """`length`, or the longest string's; a `ValueError` if it cannot hold them."""
    if not strings:
        raise ValueError(f"{caller} needs at least one string; received an empty list.")
    longest = max(len(s) for s in strings)
    if length is None:
        return longest
    if length < longest:
        raise ValueError(
            f"length={length} is shorter than the longest string ({longest} {unit})"
        )
    return length


def frame(strings, k, length=None):
    """Frames strings for next-token prediction: see `DyckArrays`.

    Args:
        strings: iterable of int arrays (bracket ids then END), e.g. from
            `sample_dyck`.
        k: number of bracket types.
        length: padded length T; defaults to the longest string.
    """
    _check_k_m(k)
    strings = [np.asarray(s, dtype=np.int32) for s in strings]
    length = _padded_length(strings, length, "frame", "tokens")
    inputs = np.zeros((len(strings), length), dtype=np.int32)
    targets = np.zeros((len(strings), length), dtype=np.int32)
    for row, tokens in enumerate(strings):
        if tokens[-1] != END_ID:
            raise ValueError(
                f"string {row} does not end with END_ID={END_ID}; expected "
                "bracket ids followed by END"
            )
        inputs[row, 0] = START_ID
        inputs[row, 1 : len(tokens)] = tokens[:-1]
        targets[row, : len(tokens)] = tokens
    close_targets, distances = annotate_targets(targets, k)
    first_close = FIRST_BRACKET_ID + k
    is_close = (targets >= first_close) & (targets < first_close + k)
    return DyckArrays(
        inputs=inputs,
        targets=targets,
        mask=(targets != PAD_ID).astype(np.float32),
        close_targets=close_targets,
        distances=distances,
        close_labels=np.where(is_close, targets - first_close, 0).astype(np.int32),
        close_weights=is_close.astype(np.float32),
    )


def closing_as_next_token(closing, k):
    """Closing-bracket probabilities `[..., k]` in the Dyck token layout.

    The result `[..., 3 + 2k]` is zero but for the closing brackets, so the
    WCPA/LDPA of a language model apply to the Dyck-RNN's output unchanged.
    """
    closing = np.asarray(closing)
    probabilities = np.zeros(closing.shape[:-1] + (vocabulary_size(k),), "float32")
    first_close = close_id(0, k)
    probabilities[..., first_close : first_close + k] = closing
    return probabilities


@dataclasses.dataclass
class DepthArrays:
    """Padded arrays for tagging each bracket with the stack depth after it.

    Shape `(num_strings, T)`; END is not part of the input.

    Attributes:
        inputs: the bracket ids; PAD_ID after the end.
        depths: the number of open brackets not yet closed after reading
            `inputs[:, :t+1]`, 0 .. m (0 on padding).
        mask: float32, 1 on brackets, 0 on padding.
        lengths: int32 `(num_strings,)`, the number of brackets.
    """

    inputs: np.ndarray
    depths: np.ndarray
    mask: np.ndarray
    lengths: np.ndarray


def frame_depths(strings, k, length=None):
    """Frames strings for depth tagging: see `DepthArrays`.

    Args:
        strings: iterable of int arrays of bracket ids, optionally ending with
            END (dropped), e.g. from `sample_dyck`.
        k: number of bracket types.
        length: padded length T; defaults to the longest string.
    """
    _check_k_m(k)
    strings = [np.asarray(s, dtype=np.int32) for s in strings]
    strings = [s[:-1] if len(s) and s[-1] == END_ID else s for s in strings]
    length = _padded_length(strings, length, "frame_depths", "brackets")
    inputs = np.zeros((len(strings), length), dtype=np.int32)
    depths = np.zeros((len(strings), length), dtype=np.int32)
    for row, tokens in enumerate(strings):
        kind = tokens - FIRST_BRACKET_ID
        if ((kind < 0) | (kind >= 2 * k)).any():
            raise ValueError(
                f"string {row} holds a token that is no bracket of Dyck-{k}; "
                f"expected ids {FIRST_BRACKET_ID} .. {FIRST_BRACKET_ID + 2 * k - 1}"
            )
        depth = np.cumsum(np.where(kind < k, 1, -1))
        if len(depth) and depth.min() < 0:
            raise ValueError(
                f"string {row} closes a bracket it never opened (depth "
                f"{int(depth.min())}); expected a prefix of a Dyck-{k} string"
            )
        inputs[row, : len(tokens)] = tokens
        depths[row, : len(tokens)] = depth
    lengths = np.array([len(s) for s in strings], dtype=np.int32)
    return DepthArrays(
        inputs=inputs,
        depths=depths,
        mask=(inputs != PAD_ID).astype(np.float32),
        lengths=lengths,
    )
