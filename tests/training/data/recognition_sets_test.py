import numpy as np
import pytest

from training.data import languages, recognition_sets


@pytest.mark.parametrize("language", ["D2", "D3", "D6", "palindrome"])
def test_split_labels_agree_with_the_oracle(language):
    split = recognition_sets.make_split(
        language, 400, 6, 40, seed=0, hard_fraction=0.25
    )
    assert len(split) == 400 and split.labels.sum() == 200
    for string, label in zip(split.strings, split.labels, strict=True):
        assert languages.is_member(string, language) == bool(label)
        assert 6 <= len(string) <= 40
    assert split.is_hard.sum() == 50
    assert not split.is_hard[split.labels == 1].any()


@pytest.mark.parametrize("language", ["D2", "palindrome"])
def test_hard_negatives_swap_symbols_of_a_positive(language):
    split = recognition_sets.make_split(language, 400, 9, 31, seed=1, hard_fraction=0.3)
    positives = [s for s, y in zip(split.strings, split.labels, strict=True) if y]
    sources = {tuple(sorted(p)) for p in positives}  # a swap keeps the symbols
    hard = [s for s, h in zip(split.strings, split.is_hard, strict=True) if h]
    assert len(hard) == 60
    for string in hard:
        assert not languages.is_member(string, language)
        assert tuple(sorted(string)) in sources
    hard_fraction_default = recognition_sets.make_split(
        "D2", 1000, 2, 30, seed=2
    ).is_hard
    assert 0.15 * 500 - 1 <= hard_fraction_default.sum() <= 0.30 * 500 + 1


def test_edit_negatives_change_lengths():
    split = recognition_sets.make_split(
        "D2", 400, 10, 30, seed=1, hard_fraction=0.3, hard_negatives="edit"
    )
    positives = [s for s, y in zip(split.strings, split.labels, strict=True) if y]
    hard = [s for s, h in zip(split.strings, split.is_hard, strict=True) if h]
    for string in hard:
        assert not languages.is_member(string, "D2")
        # 1 to 3 edits change the length by at most 3.
        assert min(abs(len(string) - len(p)) for p in positives) <= 3
    assert sum(len(s) % 2 for s in hard) > 10  # odd: an insertion or deletion


def test_pcfg_branching():
    # p1 = 0, p = 1 would never stop; p = 0.4, p1 = 0 gives nested strings only.
    strings = recognition_sets.sample_positives("D2", 200, 2, 40, p=0.4, p1=0.0, seed=0)
    for s in strings:
        half = len(s) // 2
        assert all(t in (3, 4) for t in s[:half])  # opens, then closes
        assert all(t in (5, 6) for t in s[half:])


def one_string_at_a_time(rng, n, p, p1, max_length):
    """Eq. 28 derived as the grammar reads, 64 uniforms drawn at a time: the
    sampler's specification (None once the string passes max_length)."""
    out, pending, draws = [], [-1], []
    while pending:
        item = pending.pop()
        if item >= 0:
            out.append(item)
            continue
        if not draws:
            draws = rng.random(64).tolist()[::-1]
        u = draws.pop()
        if u < p:
            kind = min(int(u / p * n), n - 1)
            pending += [3 + n + kind, -1]
            out.append(3 + kind)
            if len(out) + sum(item >= 0 for item in pending) > max_length:
                return None
        elif u < p + p1:
            pending += [-1, -1]
    return out


@pytest.mark.parametrize(
    ("language", "num", "low", "high", "p", "p1"),
    [
        ("D2", 300, 1, 55, 0.5, 0.25),
        ("D3", 60, 56, 102, 0.5, 0.25),
        ("D6", 20, 103, 160, 0.5, 0.25),
        ("D3", 200, 1, 10, 0.6, 0.3),  # most derivations pass max_length
    ],
)
def test_positives_are_the_one_string_at_a_time_draws(language, num, low, high, p, p1):
    # The sampler reads its uniforms ahead; the strings and the generator's
    # state after are those of drawing 64 at a time as a string needs them.
    reference, rng = [], np.random.default_rng(3)
    rng.integers(5)  # a generator holding half of a 64-bit draw
    expected = np.random.default_rng(3)
    expected.integers(5)
    n = languages.bracket_types(language)
    while len(reference) < num:
        string = one_string_at_a_time(expected, n, p, p1, high)
        if string is not None and len(string) >= low:
            reference.append(string)
    strings = recognition_sets.sample_positives(
        language, num, low, high, p=p, p1=p1, seed=rng
    )
    assert strings == reference
    assert rng.bit_generator.state == expected.bit_generator.state
    assert rng.integers(2**32) == expected.integers(2**32)


def test_paper_splits_sizes_lengths_and_no_leak():
    splits = recognition_sets.mali_splits("D2", seed=0)
    expected = {
        "train": (6230, 1, 55),
        "valid": (1000, 21, 70),
        "test": (3000, 56, 102),
        "long_120": (1500, 103, 120),
        "long_160": (1500, 103, 160),
        "test_mixed": (3000, 1, 102),
    }
    train = {tuple(s) for s in splits["train"].strings}
    for name, (size, lo, hi) in expected.items():
        split = splits[name]
        lengths = [len(s) for s in split.strings]
        assert len(split) == size and split.labels.sum() == size // 2
        assert lo <= min(lengths) and max(lengths) <= hi
        if name != "train":
            assert not train & {tuple(s) for s in split.strings}
    mixed = [len(s) for s in splits["test_mixed"].strings]
    assert sum(n <= 55 for n in mixed) == 1500  # half short, half long
    d6 = recognition_sets.mali_splits("D6", seed=0, scale=0.1)
    assert [len(d6[n]) for n in ("train", "valid", "test")] == [1500, 200, 400]


def test_frame_and_dataset():
    split = recognition_sets.RecognitionSplit(
        strings=[[3, 5], [3, 6, 5]],
        labels=np.array([1, 0]),
        is_hard=np.array([False, False]),
        min_length=2,
        max_length=3,
    )
    arrays = recognition_sets.frame(split, "D2")
    np.testing.assert_array_equal(arrays.inputs, [[1, 3, 5, 0], [1, 3, 6, 5]])
    np.testing.assert_array_equal(arrays.targets, [[3, 5, 2, 0], [3, 6, 5, 2]])
    np.testing.assert_array_equal(arrays.prefix_labels, [[1, 0, 1, 0], [1, 0, 0, 0]])
    np.testing.assert_array_equal(arrays.mask, [[1, 1, 1, 0], [1, 1, 1, 1]])
    np.testing.assert_array_equal(arrays.lengths, [2, 3])
    # ( = 3, [ = 4, ) = 5, ] = 6, END = 2: legal after "", "(", "()" and "(]".
    legal = [np.flatnonzero(row).tolist() for row in arrays.legal_next[0, :3]]
    assert legal == [[2, 3, 4], [3, 4, 5], [2, 3, 4]]
    assert arrays.legal_next[1, 1].any() and not arrays.legal_next[1, 2:].any()
    assert not arrays.legal_next[0, 3].any()  # padding
    last = arrays.prefix_labels[np.arange(2), arrays.lengths]
    np.testing.assert_array_equal(last, arrays.labels)


@pytest.mark.parametrize(
    "language, lo, hi, message",
    [
        ("D2", 5, 5, r"length range \[5, 5\] holds no D2 string; expected .* even"),
        ("palindrome", 4, 4, r"holds no palindrome string; expected .* odd"),
        ("D2", 30, 10, r"length range \[30, 10\]"),
        ("D0", 2, 10, r"language must be 'Dn'"),
        ("anbn", 2, 10, r"language must be 'Dn'"),
    ],
)
def test_bad_arguments(language, lo, hi, message):
    with pytest.raises(ValueError, match=message) as info:
        recognition_sets.make_split(language, 10, lo, hi)
    assert "\n" not in str(info.value)


def test_unknown_hard_negatives_raise():
    with pytest.raises(ValueError, match="hard_negatives must be one of 'swap'"):
        recognition_sets.make_split("D2", 10, 2, 10, hard_negatives="flip")


def test_unreachable_range_raises():
    with pytest.raises(
        ValueError, match=r"expected a length range the grammar reaches"
    ):
        recognition_sets.sample_positives("D2", 5, 100, 102, p=0.1, p1=0.0, seed=0)
