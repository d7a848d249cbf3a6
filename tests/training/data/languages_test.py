import numpy as np
import pytest

from training.data import languages
from training.data.dyck_strings import END_ID


def test_alphabets_follow_the_dyck_layout():
    assert languages.alphabet("D2") == [3, 4, 5, 6]
    assert languages.alphabet("D6") == list(range(3, 15))
    assert languages.alphabet("palindrome") == [3, 4, 5]
    assert languages.vocabulary_size("D3") == 9
    assert languages.token_names("palindrome") == [
        "<pad>",
        "START",
        "END",
        "a",
        "b",
        "c",
    ]
    assert languages.token_names("D2")[3:] == ["(a", "(b", "a)", "b)"]
    for language in ("D2", "D6", "palindrome"):
        assert len(languages.token_names(language)) == languages.vocabulary_size(
            language
        )


def test_oracle_and_prefix_labels():
    # D2: ( [ ] ) ( )   with ( = 3, [ = 4, ) = 5, ] = 6
    np.testing.assert_array_equal(
        languages.prefix_labels([3, 4, 6, 5, 3, 5], "D2"), [1, 0, 0, 0, 1, 0, 1]
    )
    # An error stays an error: ( ] ( ) never becomes valid.
    np.testing.assert_array_equal(
        languages.prefix_labels([3, 6, 3, 5], "D2"), [1, 0, 0, 0, 0]
    )
    # Palindrome a b c b a with a = 3, b = 4, c = 5.
    np.testing.assert_array_equal(
        languages.prefix_labels([3, 4, 5, 4, 3], "palindrome"), [0, 0, 0, 0, 0, 1]
    )
    np.testing.assert_array_equal(
        languages.prefix_labels([5, 3, 5], "palindrome"), [0, 1, 0, 0]
    )
    assert not languages.is_member([3, 5, 4, 3], "palindrome")
    assert languages.is_member([], "D3")


def all_strings(language, max_length):
    """Every string of the language up to `max_length` symbols, by brute force."""
    symbols = languages.alphabet(language)
    strings, frontier = [], [[]]
    for _ in range(max_length + 1):
        strings += [s for s in frontier if languages.is_member(s, language)]
        frontier = [s + [x] for s in frontier for x in symbols]
    return strings


@pytest.mark.parametrize("language, max_length", [("D2", 8), ("palindrome", 9)])
def test_legal_next_agrees_with_brute_force(language, max_length):
    # x may follow p iff some string of the language starts with p + [x]
    # (END: p itself is one). Prefixes up to 3 symbols: every continuation
    # needs at most 8 (D2) or 9 (palindrome) symbols in all.
    strings = all_strings(language, max_length)
    follows = {}
    for string in strings:
        for j in range(len(string) + 1):
            after = string[j] if j < len(string) else END_ID
            follows.setdefault(tuple(string[:j]), set()).add(after)
    symbols = languages.alphabet(language)
    prefixes = [[]] + [[a] for a in symbols]
    prefixes += [p + [b] for p in prefixes if p for b in symbols]
    prefixes += [p + [c] for p in prefixes if len(p) == 2 for c in symbols]
    for prefix in prefixes:
        legal = languages.legal_next(prefix, language)[-1]
        assert set(np.flatnonzero(legal)) == follows.get(tuple(prefix), set()), prefix
    row = languages.legal_next([3, 6, 3], "D2")  # ( ] (: no string continues
    assert row[0].any() and row[1].any() and not row[2:].any()


@pytest.mark.parametrize("language", ["D2", "D3", "D6", "palindrome"])
def test_frame_rows_are_each_strings_rows(language):
    # Members, near misses and noise, of many lengths (the empty string
    # too): the rows read together equal the rows read string by string.
    rng = np.random.default_rng(0)
    symbols = languages.alphabet(language)
    strings = [[]]
    for _ in range(400):
        string = [int(s) for s in rng.choice(symbols, size=rng.integers(1, 12))]
        strings.append(string)
    if language != "palindrome":  # a nested member: ( [ ] )
        half = len(symbols) // 2
        strings.append([symbols[0], symbols[1], symbols[1 + half], symbols[half]])
    length = max(len(s) for s in strings) + 3
    labels, legal = languages.frame_rows(strings, language, length)
    for row, string in enumerate(strings):
        size = len(string) + 1
        assert (
            labels[row, :size].tolist()
            == languages.prefix_labels(string, language).tolist()
        )
        assert (legal[row, :size] == languages.legal_next(string, language)).all()
        assert not labels[row, size:].any() and not legal[row, size:].any()
    assert labels[:, 0].all() == (language != "palindrome")
    assert any(languages.is_member(s, language) for s in strings[1:])
