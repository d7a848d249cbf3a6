"""The recognition languages: Dyck-n and palindromes (Mali et al., 2020).

For each language (`"Dn"`, e.g. `"D2"`, or `"palindrome"`, the strings
w c w^R over {a, b} with the centre marker c): its alphabet and token names,
the exact recogniser (`is_member`), the membership of every prefix
(`prefix_labels`) and the symbols that may follow every prefix
(`legal_next`). The sets sampled from them are `training.data.recognition_sets`'s.

Token ids follow `training.data.dyck_strings`: 0 PAD, 1 START, 2 END, then for Dyck-n
the open brackets 3 .. 2+n and close brackets 3+n .. 2+2n; for the palindrome
language a = 3, b = 4, c = 5.
"""

import numpy as np

from training.data import dyck_strings
from training.data.dyck_strings import END_ID, FIRST_BRACKET_ID

LANGUAGES = ("D2", "D3", "D6", "palindrome")
PALINDROME_MARKER = FIRST_BRACKET_ID + 2


def bracket_types(language):
    """The number n of bracket types of `"Dn"`; `None` for `"palindrome"`.

    Any other name is a one-line `ValueError`.
    """
    if language == "palindrome":
        return None
    if (
        isinstance(language, str)
        and language.startswith("D")
        and language[1:].isdigit()
    ):
        n = int(language[1:])
        if n >= 1:
            return n
    raise ValueError(
        "language must be 'Dn' (n >= 1, e.g. 'D2') or 'palindrome'; "
        f"received {language!r}."
    )


def alphabet(language):
    """Token ids of the language's symbols."""
    n = bracket_types(language)
    if n is None:
        return list(range(FIRST_BRACKET_ID, FIRST_BRACKET_ID + 3))
    return list(range(FIRST_BRACKET_ID, FIRST_BRACKET_ID + 2 * n))


def vocabulary_size(language):
    """Number of token ids including PAD, START and END."""
    return FIRST_BRACKET_ID + len(alphabet(language))


def token_names(language):
    """Names of the ids 0 .. `vocabulary_size(language) - 1`.

    Dyck-n uses Hewitt's spelling (`(a`, `a)`, ...); the palindrome language
    `a`, `b` and the centre marker `c`.
    """
    n = bracket_types(language)
    if n is None:
        return ["<pad>", "START", "END", "a", "b", "c"]
    return dyck_strings.token_names(n)


def prefix_labels(tokens, language):
    """Membership of every prefix: int32 array of length len(tokens) + 1.

    Entry j is 1 when tokens[:j] is in the language (entry 0 is the empty
    string). The last entry is the string's own label.
    """
    tokens = [int(t) for t in np.asarray(tokens).tolist()]
    labels = np.zeros(len(tokens) + 1, dtype=np.int32)
    n = bracket_types(language)
    if n is None:
        marker_at = None
        for j, token in enumerate(tokens, start=1):
            if token == PALINDROME_MARKER:
                if marker_at is not None:
                    break  # a second marker: no longer prefix can be valid
                marker_at = j
            elif token not in (FIRST_BRACKET_ID, FIRST_BRACKET_ID + 1):
                break
            if marker_at is not None and j == 2 * marker_at - 1:
                prefix = tokens[:j]
                labels[j] = int(prefix == prefix[::-1])
        return labels
    labels[0] = 1
    stack = []
    for j, token in enumerate(tokens, start=1):
        kind = token - FIRST_BRACKET_ID
        if 0 <= kind < n:
            stack.append(kind)
        elif n <= kind < 2 * n and stack and stack[-1] == kind - n:
            stack.pop()
        else:
            break  # an error: every longer prefix is invalid too
        labels[j] = int(not stack)
    return labels


def is_member(tokens, language):
    """The exact recogniser (oracle): True if `tokens` is in the language."""
    return bool(prefix_labels(tokens, language)[-1])


def legal_next(tokens, language):
    """The symbols that may follow every prefix: bool array `(len + 1, vocab)`.

    Row j is the set of token ids x such that `tokens[:j] + [x]` is a prefix
    of some string of the language, with END (`END_ID`) legal exactly when
    `tokens[:j]` is itself a complete string. For Dyck-n: any open bracket,
    the close bracket matching the top of the stack, END on an empty stack;
    for palindromes w c w^R: a, b or c before the centre, then the mirrored
    symbol, then END. After the first symbol that no string continues, every
    row is empty. Lengths are unbounded (a split's length range is ignored).
    """
    tokens = [int(t) for t in np.asarray(tokens).tolist()]
    legal = np.zeros((len(tokens) + 1, vocabulary_size(language)), dtype=bool)
    n = bracket_types(language)
    if n is None:
        # One pass: row j checks only the symbol the prefix tokens[:j] added.
        a, b = FIRST_BRACKET_ID, FIRST_BRACKET_ID + 1
        centre = None  # the marker's index once the prefix holds it
        for j in range(len(tokens) + 1):
            if centre is None:
                if j and tokens[j - 1] == PALINDROME_MARKER:
                    centre = j - 1
                elif j and tokens[j - 1] not in (a, b):
                    break
                else:
                    legal[j, [a, b, PALINDROME_MARKER]] = True
                    continue
            after = j - centre - 1  # symbols after the centre
            if after > centre or (after and tokens[j - 1] != tokens[centre - after]):
                break  # longer than its mirror, or not mirrored
            legal[j, END_ID if after == centre else tokens[centre - after - 1]] = True
        return legal
    # The stack's top after each prefix that a string continues (-1: empty),
    # then every row's legal symbols at once: a pure Python loop per row
    # costs about a tenth of a recognition run's set-up.
    tops, stack = [-1], []
    for token in tokens:
        kind = token - FIRST_BRACKET_ID
        if 0 <= kind < n:
            stack.append(kind)
        elif n <= kind < 2 * n and stack and stack[-1] == kind - n:
            stack.pop()
        else:
            break  # no string continues this prefix
        tops.append(stack[-1] if stack else -1)
    tops = np.asarray(tops)
    rows = np.arange(len(tops))
    legal[rows, FIRST_BRACKET_ID : FIRST_BRACKET_ID + n] = True
    nonempty = tops >= 0
    legal[rows[nonempty], FIRST_BRACKET_ID + n + tops[nonempty]] = True
    legal[rows[~nonempty], END_ID] = True
    return legal


def frame_rows(strings, language, length):
    """`prefix_labels` and `legal_next` of many strings at once.

    Returns `(labels, legal)`: int32 `(N, length)` and bool `(N, length,
    vocab)`, string i's rows in its first `len + 1` rows and zeros after;
    `length` is at least the longest string's length + 1. For Dyck-n the
    strings are read together, one position at a time, each with its own
    stack (a Python loop per string was most of framing a split: 90,000
    strings for a table's rules); palindromes string by string.
    """
    count = len(strings)
    labels = np.zeros((count, length), dtype=np.int32)
    legal = np.zeros((count, length, vocabulary_size(language)), dtype=bool)
    n = bracket_types(language)
    if n is None:
        for row, string in enumerate(strings):
            labels[row, : len(string) + 1] = prefix_labels(string, language)
            legal[row, : len(string) + 1] = legal_next(string, language)
        return labels, legal
    sizes = np.array([len(string) for string in strings], dtype=np.int64)
    tokens = np.full((count, length), -1, dtype=np.int64)
    for row, string in enumerate(strings):
        tokens[row, : len(string)] = string
    rows = np.arange(count)
    stack = np.zeros((count, length), dtype=np.int64)  # bracket kinds, bottom first
    depth = np.zeros(count, dtype=np.int64)
    alive = np.ones(count, dtype=bool)  # no error in the prefix read so far
    for j in range(length):
        live = alive & (j <= sizes)  # row j of the strings it describes
        if not live.any():
            break
        top = stack[rows, np.maximum(depth - 1, 0)]
        empty = depth == 0
        labels[live, j] = empty[live]
        legal[live, j, FIRST_BRACKET_ID : FIRST_BRACKET_ID + n] = True
        closing = live & ~empty
        legal[rows[closing], j, FIRST_BRACKET_ID + n + top[closing]] = True
        legal[rows[live & empty], j, END_ID] = True
        kind = tokens[:, j] - FIRST_BRACKET_ID
        reading = live & (j < sizes)
        push = reading & (kind >= 0) & (kind < n)
        pop = reading & (kind >= n) & (kind < 2 * n) & ~empty & (top == kind - n)
        stack[rows[push], depth[push]] = kind[push]
        depth += push.astype(np.int64) - pop
        alive &= ~(reading & ~push & ~pop)
    return labels, legal
