import numpy as np
import pytest

from training.data import dyck_strings

K, M = 2, 4


def _open_close(k):
    opens = [dyck_strings.open_id(i) for i in range(k)]
    closes = [dyck_strings.close_id(i, k) for i in range(k)]
    return opens, closes


def test_token_layout():
    assert dyck_strings.token_names(2) == [
        "<pad>",
        "START",
        "END",
        "(a",
        "(b",
        "a)",
        "b)",
    ]
    assert dyck_strings.vocabulary_size(2) == 7
    assert (dyck_strings.PAD_ID, dyck_strings.START_ID, dyck_strings.END_ID) == (
        0,
        1,
        2,
    )
    assert _open_close(2) == ([3, 4], [5, 6])


def test_every_string_is_valid_and_in_range():
    strings = dyck_strings.sample_dyck(
        K, M, num_sequences=500, min_length=9, max_length=41, seed=0
    )
    assert len(strings) == 500
    for s in strings:
        assert s[-1] == dyck_strings.END_ID and dyck_strings.END_ID not in s[:-1]
        assert dyck_strings.is_dyck(s, K, M)
        assert 9 <= len(s) <= 41


def _length_distribution(m, min_length, max_length):
    """Exact P(length = L) of the specification, by dynamic programming.

    The automaton's state for lengths is (brackets so far, depth): at depth 0
    END has probability 1/2 once `min_length` brackets were read (before
    that it is redrawn, so an open bracket is certain), at depth m the close
    is forced, elsewhere open and close have 1/2 each. Strings longer than
    `max_length` (END included) are rejected, so the rest is renormalised.
    """
    mass = {0: 1.0}  # depth -> probability, after n brackets
    ends = {}
    for n in range(max_length):
        following = {}
        for depth, p in mass.items():
            moves = []
            if depth == m:
                moves = [(depth - 1, 1.0)]
            elif depth == 0:
                if n >= min_length:
                    ends[n + 1] = ends.get(n + 1, 0.0) + p / 2
                    moves = [(1, 0.5)]
                else:
                    moves = [(1, 1.0)]
            else:
                moves = [(depth - 1, 0.5), (depth + 1, 0.5)]
            for target, q in moves:
                following[target] = following.get(target, 0.0) + p * q
        mass = following
    total = sum(ends.values())
    return {length: p / total for length, p in ends.items()}


def test_default_lengths_follow_hewitts_sampler():
    # Hewitt's sampler redraws END until min_length brackets were read, so
    # the default (1) never gives the empty string; the length distribution
    # (END included) matches the specification computed exactly.
    strings = dyck_strings.sample_dyck(K, M, num_sequences=20_000, seed=3)
    lengths = np.array([len(s) for s in strings])
    assert lengths.min() >= 3  # two brackets and END
    expected = _length_distribution(M, 1, dyck_strings.hewitt_max_length(M))
    mean = sum(length * p for length, p in expected.items())
    assert 16 < mean < 17  # 16.8; 8.9 when the empty string was allowed
    spread = np.sqrt(sum((length - mean) ** 2 * p for length, p in expected.items()))
    assert abs(lengths.mean() - mean) < 4 * spread / np.sqrt(len(lengths))
    for length in (3, 5, 7, 9, 15, 31):
        p = expected[length]
        sigma = np.sqrt(p * (1 - p) / len(lengths))
        assert abs(np.mean(lengths == length) - p) < 4 * sigma, length


def test_is_dyck_rejects_invalid():
    assert dyck_strings.is_dyck([3, 5, 2], 2, 1)
    assert not dyck_strings.is_dyck([3, 6, 2], 2)  # wrong close type
    assert not dyck_strings.is_dyck([3, 3, 5, 5], 2, 1)  # deeper than m
    assert not dyck_strings.is_dyck([3], 2)  # unclosed
    assert not dyck_strings.is_dyck([5, 3], 2)  # close before open


def test_next_token_probabilities_match_specification():
    strings = dyck_strings.sample_dyck(
        K, M, num_sequences=4000, min_length=5, max_length=10_000, seed=1
    )
    counts = {}  # (state, token kind) -> count
    for s in strings:
        stack = []
        for position, token in enumerate(s.tolist()):
            depth = len(stack)
            short = position < 5  # fewer than min_length brackets: END redrawn
            state = (
                "full"
                if depth == M
                else (
                    "empty_short"
                    if depth == 0 and short
                    else "empty"
                    if depth == 0
                    else "mid"
                )
            )
            if token == dyck_strings.END_ID:
                kind = "end"
            elif token in (3, 4):
                kind = f"open{token - 3}"
                stack.append(token - 3)
            else:
                kind = "match" if token - 5 == stack[-1] else "mismatch"
                stack.pop()
            counts[state, kind] = counts.get((state, kind), 0) + 1
    expected = {
        "empty": {"end": 0.5, "open0": 0.25, "open1": 0.25},
        "empty_short": {"end": 0.0, "open0": 0.5, "open1": 0.5},
        "mid": {"match": 0.5, "open0": 0.25, "open1": 0.25, "mismatch": 0.0},
        "full": {"match": 1.0, "open0": 0.0, "open1": 0.0, "mismatch": 0.0},
    }
    for state, probabilities in expected.items():
        total = sum(c for (s, _), c in counts.items() if s == state)
        assert total > 2000, state
        for kind, p in probabilities.items():
            observed = counts.get((state, kind), 0) / total
            tolerance = 4 * np.sqrt(p * (1 - p) / total) + 1e-12
            assert abs(observed - p) <= tolerance, (state, kind, observed, p)


def test_generator_is_seeded():
    a = dyck_strings.sample_dyck(K, M, num_sequences=20, seed=3)
    b = dyck_strings.sample_dyck(K, M, num_sequences=20, seed=3)
    c = dyck_strings.sample_dyck(K, M, num_sequences=20, seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(
        len(x) == len(y) and np.array_equal(x, y) for x, y in zip(a, c, strict=True)
    )


def test_token_budget_counts_tokens():
    strings = dyck_strings.sample_dyck(K, M, num_tokens=1000, seed=0)
    total = sum(len(s) for s in strings)
    assert 1000 <= total < 1000 + dyck_strings.hewitt_max_length(M)
    assert total - len(strings[-1]) < 1000


@pytest.mark.parametrize("m", [4, 6, 8])
def test_report_sized_splits_and_lengths(m):
    # The reports' setup: Dyck-(2, m), 10k/4k/10k sequences.
    splits = dyck_strings.dyck_splits(
        2, m, train=10_000, dev=4_000, test=10_000, unit="sequences", seed=0
    )
    longest = 8 * m * (m - 2) + 60
    assert {name: len(v) for name, v in splits.items()} == {
        "train": 10_000,
        "dev": 4_000,
        "test": 10_000,
    }
    for name in ("train", "dev"):
        assert max(len(s) for s in splits[name]) <= longest
    test_lengths = [len(s) for s in splits["test"]]
    assert min(test_lengths) >= longest + 1 and max(test_lengths) <= 2 * longest
    assert all(dyck_strings.is_dyck(s, 2, m) for s in splits["test"][:200])


def test_hewitt_token_splits():
    splits = dyck_strings.dyck_splits(2, 3, train=5000, dev=500, test=2000, seed=0)
    for name, budget in (("train", 5000), ("dev", 500), ("test", 2000)):
        assert sum(len(s) for s in splits[name]) >= budget
    longest = dyck_strings.hewitt_max_length(3)
    assert max(len(s) for s in splits["train"] + splits["dev"]) <= longest
    assert longest < min(len(s) for s in splits["test"])
    assert max(len(s) for s in splits["test"]) <= 2 * longest


def test_frame_arrays():
    # ( [ ] ) ( ) END  with k=2: (a=3 (b=4 a)=5 b)=6
    strings = [np.array([3, 4, 6, 5, 3, 5, 2]), np.array([2])]
    arrays = dyck_strings.frame(strings, 2)
    np.testing.assert_array_equal(arrays.inputs[0], [1, 3, 4, 6, 5, 3, 5])
    np.testing.assert_array_equal(arrays.targets[0], [3, 4, 6, 5, 3, 5, 2])
    np.testing.assert_array_equal(arrays.inputs[1], [1, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(arrays.targets[1], [2, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(arrays.mask[1], [1, 0, 0, 0, 0, 0, 0])
    # Stack non-empty after reading START ( ; START ( [ ; START ( [ ] ; START ( [ ] ) (
    np.testing.assert_array_equal(arrays.close_targets[0], [0, 5, 6, 5, 0, 5, 0])
    np.testing.assert_array_equal(arrays.distances[0], [0, 1, 1, 3, 0, 1, 0])
    np.testing.assert_array_equal(arrays.close_labels[0], [0, 0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(arrays.close_weights[0], [0, 0, 1, 1, 0, 1, 0])
    assert arrays.inputs.dtype == np.int32


def test_depth_arrays():
    # ( [ ] ) ( ) END  with k=2: (a=3 (b=4 a)=5 b)=6; END is not an input.
    strings = [np.array([3, 4, 6, 5, 3, 5, 2]), np.array([4, 6])]
    arrays = dyck_strings.frame_depths(strings, 2, length=8)
    np.testing.assert_array_equal(arrays.inputs[0], [3, 4, 6, 5, 3, 5, 0, 0])
    np.testing.assert_array_equal(arrays.depths[0], [1, 2, 1, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(arrays.inputs[1], [4, 6, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(arrays.depths[1], [1, 0, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(arrays.mask[1], [1, 1, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(arrays.lengths, [6, 2])
    assert arrays.inputs.dtype == arrays.depths.dtype == np.int32


def test_depths_are_the_stack_size_and_never_exceed_m():
    strings = dyck_strings.sample_dyck(3, 5, num_sequences=50, seed=3)
    arrays = dyck_strings.frame_depths(strings, 3)
    for row, tokens in enumerate(strings):
        stack = []
        for t, token in enumerate(tokens[:-1].tolist()):
            if token < dyck_strings.close_id(0, 3):
                stack.append(token)
            else:
                stack.pop()
            assert arrays.depths[row, t] == len(stack)
    assert arrays.depths.max() == 5 and arrays.depths.min() == 0


@pytest.mark.parametrize(
    "strings, message",
    [
        ([np.array([5, 3])], "closes a bracket it never opened"),
        ([np.array([3, 1, 5])], "no bracket of Dyck-2"),
        ([], "at least one string"),
    ],
)
def test_depth_arrays_refuse_what_is_no_dyck_prefix(strings, message):
    with pytest.raises(ValueError, match=message):
        dyck_strings.frame_depths(strings, 2)
    with pytest.raises(ValueError, match="shorter than the longest string"):
        dyck_strings.frame_depths([np.array([3, 5])], 2, length=1)


def test_closing_bracket_labels_are_the_stack_top():
    arrays = dyck_strings.frame(
        dyck_strings.sample_dyck(3, 5, num_sequences=50, seed=2), 3
    )
    closing = arrays.close_weights > 0
    first_close = dyck_strings.close_id(0, 3)
    np.testing.assert_array_equal(
        arrays.close_labels[closing], arrays.close_targets[closing] - first_close
    )
    np.testing.assert_array_equal(
        arrays.close_labels[closing], arrays.targets[closing] - first_close
    )


def test_closing_as_next_token_places_the_closing_brackets():
    closing = np.array([[[0.25, 0.75]]])
    probabilities = dyck_strings.closing_as_next_token(closing, 2)
    np.testing.assert_array_equal(probabilities, [[[0, 0, 0, 0, 0, 0.25, 0.75]]])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": 0, "m": 4}, r"k \(number of bracket types\) must be an integer >= 1"),
        ({"k": 2, "m": 0}, r"m \(maximum depth\) must be an integer >= 1"),
        ({"k": 2, "m": 4, "min_length": 4, "max_length": 4}, r"holds no Dyck"),
        ({"k": 2, "m": 4, "min_length": 10, "max_length": 6}, r"holds no Dyck"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        dyck_strings.sample_dyck(num_sequences=1, **kwargs)
    assert "\n" not in str(info.value)


def test_bad_budget():
    with pytest.raises(ValueError, match="exactly one of num_sequences and num_tokens"):
        dyck_strings.sample_dyck(2, 4)


def test_a_training_length_range_changes_train_and_dev_only():
    # The test split is Hewitt's whatever the training range (each split has
    # its own stream), so rows of long training strings share it.
    default = dyck_strings.dyck_splits(
        2, 4, train=50, dev=20, test=10, unit="sequences"
    )
    long = dyck_strings.dyck_splits(
        2,
        4,
        train=50,
        dev=20,
        test=10,
        unit="sequences",
        train_min_length=200,
        train_max_length=400,
    )
    for a, b in zip(default["test"], long["test"], strict=True):
        np.testing.assert_array_equal(a, b)
    for name in ("train", "dev"):
        lengths = [len(s) for s in long[name]]
        assert min(lengths) >= 201 and max(lengths) <= 400
        assert max(len(s) for s in default[name]) <= dyck_strings.hewitt_max_length(4)
    assert dyck_strings.split_length_ranges(4, 200, 400) == {
        "train": (200, 400),
        "dev": (200, 400),
        "test": (125, 248),
    }
