import re

import keras
import numpy as np
import pytest

from zoo.initializers import IndependentWeights, derive_seed


class Owner(IndependentWeights, keras.Layer):
    """A layer with a `kernel` and a part that has a `kernel` of its own."""

    def __init__(self, part, initializer, **kwargs):
        super().__init__(**kwargs)
        self.part = part
        self.initializer = initializer

    def build(self, input_shape):
        self.kernel = self.add_weight(
            shape=(input_shape[-1], 6), initializer=self.initializer, name="kernel"
        )
        self.build_part(self.part, input_shape)


class Part(IndependentWeights, keras.Layer):
    def __init__(self, initializer, **kwargs):
        super().__init__(**kwargs)
        self.initializer = initializer

    def build(self, input_shape):
        self.kernel = self.add_weight(
            shape=(input_shape[-1], 6), initializer=self.initializer, name="kernel"
        )


def built(owner):
    owner.build((None, 4))
    return owner


def test_seeds_are_the_same_in_every_process():
    # A hash of the text, not Python's per-process `hash`.
    assert derive_seed(7, "stack/push_kernel") == 905074600


@pytest.mark.parametrize(
    "make_part",
    [
        lambda initializer: Part(initializer, name="part"),
        lambda initializer: keras.layers.Dense(
            6, kernel_initializer=initializer, name="part"
        ),
    ],
    ids=["zoo layer", "keras layer"],
)
def test_a_part_draws_apart_from_its_owner_under_one_name(make_part):
    # One seeded initializer object for both `kernel`s: the names differ
    # by the part's place (`kernel`, `part/kernel`), and so do the draws.
    initializer = keras.initializers.GlorotUniform(seed=3)
    owner = built(Owner(make_part(initializer), initializer))
    again = built(Owner(make_part(initializer), initializer))
    mine, its = np.asarray(owner.kernel).ravel(), np.asarray(owner.part.kernel).ravel()
    assert abs(np.corrcoef(mine, its)[0, 1]) < 0.5
    np.testing.assert_array_equal(again.kernel, owner.kernel)
    np.testing.assert_array_equal(again.part.kernel, owner.part.kernel)


def test_a_drawn_weight_needs_a_name():
    layer = Part("glorot_uniform")
    expected = "Part.add_weight needs a `name` for a drawn weight"
    with pytest.raises(ValueError, match=re.escape(expected)) as info:
        layer.add_weight(shape=(2, 2), initializer="glorot_uniform")
    assert "\n" not in str(info.value)


def test_a_model_built_to_be_loaded_draws_nothing_but_its_seeds(tmp_path):
    import zoo
    from zoo.initializers import weights_to_be_loaded

    def built():
        model = zoo.language_model("mlstm", 7, 16)
        model.build((None, None))
        return model

    np.random.seed(0)
    drawn = built()
    after_drawn = np.random.rand()
    np.random.seed(0)
    with weights_to_be_loaded():
        loading = built()
    assert np.random.rand() == after_drawn  # the same seeds were taken
    cell = loading.backbone.recurrent_layers[0].cell
    assert all(not np.any(weight) for weight in cell.get_weights())
    assert any(
        np.any(weight)
        for weight in drawn.backbone.recurrent_layers[0].cell.get_weights()
    )
    path = tmp_path / "drawn.weights.h5"
    drawn.save_weights(path)
    loading.load_weights(path)
    tokens = np.array([[1, 2, 3, 4]])
    np.testing.assert_array_equal(loading(tokens), drawn(tokens))
