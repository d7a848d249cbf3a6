import math

import numpy as np
import pytest

from training.data import dyck_oracle, dyck_strings

K = 2


def _sampler_probability(tokens, k, m, min_length, max_length):
    """P(the sampler's automaton draws `tokens`), before rejection by length.

    Transcribed from `dyck_strings._sample_string`, one draw at a time: at depth m
    the close is forced; a uniform below 1/2 is END at depth 0 (redrawn
    before `min_length` brackets) or the matching close; above, open bracket
    `floor((u - 1/2) 2k)`, 1/(2k) each. 0 for a string the loop never returns.
    """
    probability, stack = 1.0, []
    for n, token in enumerate(tokens):
        if n >= max_length:
            return 0.0
        depth = len(stack)
        redraw = depth == 0 and n < min_length
        if token == dyck_strings.END_ID:
            return probability * 0.5 if depth == 0 and not redraw else 0.0
        kind = token - dyck_strings.FIRST_BRACKET_ID
        if kind < k:
            if depth == m:
                return 0.0
            probability *= 1 / k if redraw else 1 / (2 * k)
            stack.append(kind)
        else:
            if not stack or stack[-1] != kind - k:
                return 0.0
            probability *= 1.0 if depth == m else 0.5
            stack.pop()
    return 0.0  # no END


def _every_string(k, m, max_length):
    """Every bracket sequence of depth <= m that returns to depth 0, then END.

    Up to `max_length - 1` brackets, enumerated whole (no sampling): the
    strings the sampler could draw, and no others.
    """

    def extend(tokens, stack):
        yield from (
            [np.array([*tokens, dyck_strings.END_ID], np.int32)] if not stack else []
        )
        if len(tokens) == max_length - 1:
            return
        if stack:
            yield from extend(
                [*tokens, dyck_strings.close_id(stack[-1], k)], stack[:-1]
            )
        if len(stack) < m:
            for kind in range(k):
                yield from extend([*tokens, dyck_strings.open_id(kind)], [*stack, kind])

    return list(extend([], []))


def _oracle_probabilities(oracle, strings):
    arrays = dyck_strings.frame(strings, oracle.k)
    return np.exp(oracle.token_log_probabilities(arrays).sum(axis=1))


# (m, min_length, max_length): the default range, a minimum, a narrow range.
RANGES = [(1, 1, 9), (2, 1, 11), (3, 4, 11), (2, 6, 9), (3, 1, 7)]


@pytest.mark.parametrize(("m", "low", "high"), RANGES)
def test_the_oracle_is_the_samplers_distribution_by_enumeration(m, low, high):
    # Every string of brackets up to the maximum: the oracle's product of
    # next-token probabilities is the sampler's probability of the string
    # given that it was kept, and the kept strings' probabilities sum to 1.
    oracle = dyck_oracle.DyckOracle(K, m, low, high)
    strings = _every_string(K, m, high)
    raw = np.array([_sampler_probability(s, K, m, low, high) for s in strings])
    assert raw.sum() == pytest.approx(oracle.acceptance, abs=1e-12)
    kept = raw > 0
    exact = raw[kept] / raw.sum()
    strings = [s for s, keep in zip(strings, kept, strict=True) if keep]
    np.testing.assert_allclose(_oracle_probabilities(oracle, strings), exact, 1e-10)
    assert exact.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(("m", "low", "high"), RANGES[1:3])
def test_every_next_token_distribution_sums_to_one(m, low, high):
    oracle = dyck_oracle.DyckOracle(K, m, low, high)
    strings = dyck_strings.sample_dyck(
        K, m, num_sequences=50, min_length=low, max_length=high
    )
    arrays = dyck_strings.frame(strings, K)
    probabilities = np.exp(oracle.log_probabilities(arrays))
    real = arrays.mask > 0
    np.testing.assert_allclose(probabilities.sum(-1)[real], 1.0, atol=1e-12)
    chosen = np.take_along_axis(probabilities, arrays.targets[..., None], -1)[..., 0]
    np.testing.assert_allclose(
        chosen[real], np.exp(oracle.token_log_probabilities(arrays))[real], 1e-12
    )


def test_the_oracle_matches_the_generators_frequencies():
    # A range whose maximum bites (Dyck-(2, 3), 4 to 11 tokens keeps half of the
    # samples): the sampled strings' frequencies are the oracle's.
    m, low, high = 3, 4, 11
    oracle = dyck_oracle.DyckOracle(K, m, low, high)
    assert oracle.acceptance == pytest.approx(0.5)
    strings = dyck_strings.sample_dyck(
        K, m, num_sequences=20_000, min_length=low, max_length=high, seed=5
    )
    counts = {}
    for s in strings:
        counts[tuple(s.tolist())] = counts.get(tuple(s.tolist()), 0) + 1
    keys = list(counts)
    expected = _oracle_probabilities(oracle, [np.array(key) for key in keys])
    observed = np.array([counts[key] for key in keys]) / len(strings)
    sigma = np.sqrt(expected * (1 - expected) / len(strings))
    assert np.all(np.abs(observed - expected) < 5 * sigma + 1e-4)
    # The strings drawn carry nearly all of the oracle's mass.
    assert expected.sum() > 0.98


def test_the_oracle_at_the_depth_only_bound_is_the_automaton():
    # Far from the maximum, the conditional is the automaton's own step:
    # END 1/2 at depth 0, the matching close 1/2 inside, forced at depth m.
    oracle = dyck_oracle.DyckOracle(K, 4, 1, 10_000)
    p = {
        name: np.exp(getattr(oracle, f"log_{name}")[10])
        for name in ("open", "close", "end")
    }
    np.testing.assert_allclose(p["end"], [0.5, 0, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(p["close"], [0, 0.5, 0.5, 0.5, 1], atol=1e-12)
    np.testing.assert_allclose(p["open"], [0.25, 0.25, 0.25, 0.25, 0], atol=1e-12)


def test_a_string_of_another_split_is_refused():
    oracle = dyck_oracle.DyckOracle(K, 4, 10, 30)
    short = dyck_strings.frame([np.array([3, 5, 2])], K)  # ends before the minimum
    with pytest.raises(ValueError, match="never draws there"):
        oracle.cross_entropy(short)
    wrong = dyck_strings.frame([np.array([3, 6, 2])], K)
    with pytest.raises(ValueError, match="never draws there"):
        dyck_oracle.DyckOracle(K, 4).cross_entropy(wrong)


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ({"train_min_length": 0}, "must be >= 1"),
        ({"train_min_length": 10, "train_max_length": 10}, "holds no Dyck-"),
        # exactly 2000 brackets at m = 1000: 0.89% of the samples end there
        ({"m": 1000, "train_min_length": 2000, "train_max_length": 2001}, "keeps"),
    ],
)
def test_a_length_range_the_sampler_cannot_draw_is_one_line(task, message):
    task = {"k": 2, "m": 4, "train_min_length": 1, "train_max_length": None, **task}
    with pytest.raises(ValueError, match=message) as error:
        dyck_oracle.check_task_lengths(*task.values())
    assert "\n" not in str(error.value)


def test_split_oracles_follow_the_splits_length_ranges():
    oracles = dyck_oracle.split_oracles(2, 4, 200, 400)
    bounds = {name: (o.min_length, o.max_length) for name, o in oracles.items()}
    assert bounds == {"train": (200, 400), "dev": (200, 400), "test": (125, 248)}
    default = dyck_oracle.split_oracles(2, 4)
    assert (default["dev"].min_length, default["dev"].max_length) == (1, 124)


def test_the_measured_floor_of_the_report_scale_m4_split():
    # so_dyck's m = 4 rows, seed 0 (10k/4k/10k strings): the floors measured
    # when issue 42 was filed (mean over seeds 0-2: test 2.387, valid 2.452).
    splits = dyck_strings.dyck_splits(
        2, 4, train=10_000, dev=4_000, test=10_000, unit="sequences", seed=0
    )
    oracles = dyck_oracle.split_oracles(2, 4)
    floors = {
        name: math.exp(oracles[name].cross_entropy(dyck_strings.frame(splits[name], 2)))
        for name in ("dev", "test")
    }
    assert floors["test"] == pytest.approx(2.3869, abs=1e-4)
    assert floors["dev"] == pytest.approx(2.4550, abs=1e-4)


def test_a_length_range_the_sampler_rarely_ends_in_is_refused():
    # Out of the recipes' reach (task.m <= 32 keeps at least 1/64 of the
    # samples), but the check is the sampler's own.
    with pytest.raises(ValueError, match=r"ends 0.0089 of its Dyck-\(2, 1000\)"):
        dyck_oracle.check_task_lengths(2, 1000, 2000, 2001)
