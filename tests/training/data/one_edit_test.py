import numpy as np
import pytest

from training.data import languages, one_edit, recognition_sets


def edit_distance(a, b):
    """Damerau's distance (optimal string alignment), written out for the test."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(
                rows[i - 1][j] + 1,
                row[j - 1] + 1,
                rows[i - 1][j - 1] + (a[i - 1] != b[j - 1]),
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[i - 2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def one_edit_away(string, strings):
    """Whether a string of the set `strings` is at Damerau distance 1 from
    `string`: every string one deletion, substitution, insertion or swap of
    two neighbours away, written out and looked up (the distance to each of
    hundreds of positives, in Python, took seconds)."""
    string = tuple(string)
    symbols = {s for other in strings for s in other} | set(string)
    near = set()
    for i in range(len(string) + 1):
        for symbol in symbols:
            near.add(string[:i] + (symbol,) + string[i:])  # insertions
        if i < len(string):
            near.add(string[:i] + string[i + 1 :])  # deletions
            for symbol in symbols - {string[i]}:
                near.add(string[:i] + (symbol,) + string[i + 1 :])  # substitutions
        if i + 1 < len(string) and string[i] != string[i + 1]:
            near.add(string[:i] + (string[i + 1], string[i]) + string[i + 2 :])
    return string not in strings and bool(near & strings)


@pytest.mark.parametrize("language", ["D2", "D3", "palindrome"])
def test_negatives_are_one_edit_from_a_positive_and_rejected(language):
    split = one_edit.hard_split(language, 60, 20, 40, seed=3)
    assert len(split) == 60 and split.labels.sum() == 30  # balanced 50/50
    positives = [s for s, y in zip(split.strings, split.labels, strict=True) if y]
    negatives = [s for s, y in zip(split.strings, split.labels, strict=True) if not y]
    assert len({tuple(s) for s in negatives}) == len(negatives)
    for string in positives:
        assert languages.is_member(string, language)
    near = {tuple(p) for p in positives}
    for string in negatives:
        assert not languages.is_member(string, language)
        assert one_edit_away(string, near)
    for string in split.strings:
        assert 20 <= len(string) <= 40
    assert (split.is_hard == (split.labels == 0)).all()


def test_every_kind_of_edit_occurs_and_changes_one_thing():
    rng = np.random.default_rng(0)
    string = [3, 3, 5, 4, 6, 5]  # D2: ( ( ) [ ] )
    symbols = languages.alphabet("D2")
    for edit in one_edit.EDITS:
        edited = one_edit.one_edit(string, edit, rng, symbols)
        assert edit_distance(edited, string) == 1, edit
    assert len(one_edit.one_edit(string, "insert", rng, symbols)) == 7
    assert len(one_edit.one_edit(string, "delete", rng, symbols)) == 5
    swapped = one_edit.one_edit(string, "swap", rng, symbols)
    assert sorted(swapped) == sorted(string) and swapped != string
    assert one_edit.one_edit([3, 3], "swap", rng, symbols) is None  # nothing to swap
    assert one_edit.one_edit([], "delete", rng, symbols) is None
    with pytest.raises(ValueError, match="edit must be one of"):
        one_edit.one_edit(string, "transpose", rng, symbols)


def test_the_same_seed_gives_the_same_strings():
    first = one_edit.hard_splits("D2", seed=4, scale=0.01)
    again = one_edit.hard_splits("D2", seed=4, scale=0.01)
    other = one_edit.hard_splits("D2", seed=5, scale=0.01)
    for name in one_edit.HARD_SPLITS:
        assert first[name].strings == again[name].strings
        assert (first[name].labels == again[name].labels).all()
        assert first[name].strings != other[name].strings


@pytest.mark.parametrize("language", ["D2", "D6"])
def test_hard_splits_have_the_paper_tests_lengths_and_sizes(language):
    splits = one_edit.hard_splits(language, seed=0, scale=0.02)
    paper = recognition_sets.MALI_SPLITS["D6" if language == "D6" else "small"]
    assert paper["test"][1:] == (56, 102) and paper["long_160"][1:] == (103, 160)
    for name, source in one_edit.HARD_SPLITS.items():
        size, low, high = paper[source]
        split = splits[name]
        assert len(split) == round(size * 0.02)
        assert (split.min_length, split.max_length) == (low, high)
        assert all(low <= len(s) <= high for s in split.strings)


def test_one_edit_away_agrees_with_the_distance():
    rng = np.random.default_rng(0)
    strings = [tuple(rng.integers(3, 6, size=rng.integers(0, 6))) for _ in range(300)]
    pool = set(strings[:150])
    found = set()
    for string in strings[150:]:
        distance = min(edit_distance(string, p) for p in pool)
        assert one_edit_away(string, pool) == (distance == 1), string
        found.add(distance)
    assert found >= {0, 1, 2}  # each case met


def test_a_split_too_small_is_one_line():
    with pytest.raises(ValueError, match="split size must be >= 2"):
        one_edit.hard_split("D2", 1, 10, 20)


@pytest.mark.parametrize("language", ["palindrome", "D2"])
def test_one_edit_training_replaces_train_and_valid_negatives_only(language):
    splits = recognition_sets.mali_splits(language, seed=3, scale=0.05)
    changed = one_edit.one_edit_training(splits, language, seed=3)
    for name in ("train", "valid"):
        before, after = splits[name], changed[name]
        assert len(after) == len(before)
        assert after.labels.sum() == before.labels.sum()
        positives = [s for s, y in zip(after.strings, after.labels, strict=True) if y]
        assert sorted(positives) == sorted(
            s for s, y in zip(before.strings, before.labels, strict=True) if y
        )
        near = {tuple(p) for p in positives}
        for string, label in zip(after.strings, after.labels, strict=True):
            assert after.min_length <= len(string) <= after.max_length
            if not label:
                assert not languages.is_member(string, language)
                assert one_edit_away(string, near)
    for name in ("test", "test_mixed", "long_120", "long_160"):
        assert changed[name] is splits[name]
    train = {tuple(s) for s in changed["train"].strings}
    for name in ("valid", "test", "test_mixed", "long_120", "long_160"):
        assert not train & {tuple(s) for s in changed[name].strings}
    again = one_edit.one_edit_training(splits, language, seed=3)
    assert again["train"].strings == changed["train"].strings
