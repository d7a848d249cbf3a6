import math

import keras
import numpy as np
import pytest

import zoo
from training.analysis import surprisal
from training.core import scoring


def test_surprising_positions_are_the_top_tenth_of_the_mean_loss():
    rng = np.random.default_rng(0)
    losses = rng.exponential(size=(2, 3, 50))  # models, rows, positions
    mean = losses.mean(axis=0).reshape(-1)
    expected = np.sort(np.argsort(-mean)[: math.ceil(0.1 * mean.size)])
    np.testing.assert_array_equal(surprisal.surprising_positions(losses), expected)


def test_recovery_averages_each_step_after_within_the_row():
    losses = np.array(
        [
            [[1, 9, 2, 3, 1, 1], [1, 1, 1, 1, 1, 8]],
            [[1, 7, 4, 5, 1, 1], [1, 1, 1, 1, 1, 6]],
        ],
        dtype=float,
    )
    result = surprisal.recovery(losses, fraction=2 / 12, steps=2)
    assert result["positions"] == 2
    # Surprising: row 0 position 1 and row 1 position 5 (the last of its row).
    assert result["counts"] == [2, 1, 1]
    np.testing.assert_allclose(result["after"][0], [(9 + 8) / 2, 2, 3])
    np.testing.assert_allclose(result["after"][1], [(7 + 6) / 2, 4, 5])
    np.testing.assert_allclose(result["overall"], losses.reshape(2, -1).mean(1))


def test_recovery_rejects_a_bad_fraction_and_shape():
    with pytest.raises(ValueError, match="fraction"):
        surprisal.surprising_positions(np.ones((1, 5)), fraction=0)
    with pytest.raises(ValueError, match="losses"):
        surprisal.recovery(np.ones(5))


def test_advantage_is_the_gap_after_surprises_against_the_gap_overall():
    # Model 1 loses 0.5 more than model 0 everywhere, and 1.5 more on the two
    # positions after each surprising input (the large losses at 2 and 8).
    base = np.ones(12)
    base[[2, 8]] = 9.0
    worse = base + 0.5
    worse[[3, 4, 9, 10]] += 1.0
    result = surprisal.advantage(
        np.stack([base, worse]), fraction=2 / 12, steps=2, resamples=200
    )
    np.testing.assert_allclose(result["after"], [0.5, 1.5, 1.5])
    np.testing.assert_allclose(result["overall"], 0.5 + 4 / 12)
    np.testing.assert_allclose(result["excess"], 1.5 - (0.5 + 4 / 12))
    assert result["verdict"] == "holds"
    low, high = result["excess_interval"]
    assert low <= result["excess"] <= high
    flipped = surprisal.advantage(
        np.stack([worse, base]), fraction=2 / 12, steps=2, resamples=200
    )
    assert flipped["verdict"] == "reversed"


def test_advantage_of_noise_is_within_its_interval():
    rng = np.random.default_rng(3)
    losses = rng.exponential(size=(2, 4, 500))
    result = surprisal.advantage(losses, resamples=300)
    assert result["verdict"] == "within the interval"
    low, high = result["excess_interval"]
    assert low < 0 < high
    for (low, high), mean in zip(
        result["after_interval"], result["after"], strict=True
    ):
        assert low <= mean <= high
    bits = surprisal.advantage_in_bits(result)
    np.testing.assert_allclose(bits["excess"], result["excess"] / math.log(2))


def test_advantage_needs_two_models_and_a_sound_level():
    with pytest.raises(ValueError, match="compares two models"):
        surprisal.advantage(np.ones((3, 10)))
    with pytest.raises(ValueError, match="`level` must be"):
        surprisal.advantage(np.ones((2, 10)), level=1.0)
    with pytest.raises(ValueError, match="`resamples` must be a positive integer"):
        surprisal.advantage(np.ones((2, 10)), resamples=0)


def test_token_losses_carry_the_state_across_segments():
    keras.utils.set_random_seed(1)

    def build(stateful=False, batch_size=None):
        return zoo.language_model(
            "lstm", 7, 4, stateful=stateful, batch_size=batch_size
        )

    model = build()
    ids = np.random.default_rng(1).integers(0, 7, size=23).astype("int32")
    losses = scoring.token_losses(build, model, ids, rows=2, segment=4)
    whole = keras.ops.convert_to_numpy(
        scoring.segment_losses(model, ids[:22].reshape(2, 11), ids[1:23].reshape(2, 11))
    )
    np.testing.assert_allclose(losses, whole, atol=1e-5)
    with pytest.raises(ValueError, match="has 2 tokens; expected at least 3"):
        scoring.token_losses(build, model, ids[:2], rows=2)


def test_plot_writes_a_png(tmp_path):
    result = surprisal.in_bits(surprisal.recovery(np.ones((2, 40)) * np.log(2)))
    np.testing.assert_allclose(result["overall"], [1.0, 1.0])
    path = surprisal.plot(result, ["mlstm", "lstm"], tmp_path / "surprisal.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
