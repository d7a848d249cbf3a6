import keras
import numpy as np
import pytest

import zoo
from training.analysis import dynamic
from training.core import scoring


def build(stateful=False, batch_size=None):
    return zoo.language_model("lstm", 12, 8, stateful=stateful, batch_size=batch_size)


def test_dynamic_evaluation_learns_a_text_that_repeats_itself():
    keras.utils.set_random_seed(8)
    model = build()
    before = [w.copy() for w in model.get_weights()]
    ids = np.tile(np.random.default_rng(8).integers(0, 12, size=6), 30)
    result = dynamic.dynamic_evaluation(
        build, model, ids, learning_rate=1.0, decay=0.01, segment=6
    )
    static_losses = scoring.token_losses(build, model, ids, rows=1, segment=6)
    assert result["tokens"] == static_losses.size == len(ids) - 1
    np.testing.assert_allclose(
        result["static"]["cross_entropy"], static_losses.mean(), rtol=1e-5
    )
    assert result["dynamic"]["cross_entropy"] < 0.8 * result["static"]["cross_entropy"]
    for weight, saved in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(weight, saved)


def test_rms_normalised_updates_learn_it_too():
    keras.utils.set_random_seed(8)
    model = build()
    other_text = np.random.default_rng(10).integers(0, 12, size=200)
    statistics = dynamic.gradient_statistics(build, model, other_text, segment=12)
    assert len(statistics) == len(build().trainable_variables)
    result = dynamic.dynamic_evaluation(
        build,
        model,
        np.tile(np.random.default_rng(8).integers(0, 12, size=6), 30),
        learning_rate=1e-3,
        decay=0.01,
        segment=6,
        statistics=statistics,
    )
    assert result["dynamic"]["cross_entropy"] < 0.9 * result["static"]["cross_entropy"]


def test_no_learning_rate_gives_the_static_numbers():
    keras.utils.set_random_seed(11)
    model = build()
    ids = np.random.default_rng(11).integers(0, 12, size=50)
    result = dynamic.dynamic_evaluation(build, model, ids, learning_rate=0.0, segment=7)
    np.testing.assert_allclose(
        result["dynamic"]["cross_entropy"], result["static"]["cross_entropy"], rtol=1e-5
    )
    assert result["segments"] == 7


def test_bad_settings_and_an_empty_split_are_refused():
    model = build()
    with pytest.raises(ValueError, match="decay"):
        dynamic.dynamic_evaluation(build, model, np.arange(10), decay=2.0)
    with pytest.raises(ValueError, match="has 0 tokens"):
        dynamic.dynamic_evaluation(build, model, np.array([], "int32"))
