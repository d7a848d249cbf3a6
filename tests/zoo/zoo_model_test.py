"""A zoo model is the same model by every door (zoo/zoo_model.py).

Built by its builder, loaded from a `.keras` file (`keras.saving.load_model`)
or from a preset (`Class.from_preset`): the same class, config, outputs,
recurrent loop and compiled-step choice (XLA, steps per call).
"""

import functools

import keras
import numpy as np
import pytest

import zoo
from zoo.tensorflow_steps import groups_steps

on_tensorflow = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="TensorFlow's compiled steps"
)
IDS = np.array([[1, 3, 4, 6, 5, 2], [3, 4, 5, 0, 0, 0]], "int32")

HEADS = {
    "language_model": lambda: zoo.language_model("mlstm", 7, 4, num_layers=2),
    "tied_language_model": lambda: zoo.language_model(
        "lstm", 7, 4, tie_embeddings=True, embedding_dim=3
    ),
    "recognizer": lambda: zoo.recognizer("diffstk_rnn", 7, 4, stack_depth=3),
    "tagger": lambda: zoo.tagger("gru", 7, 4, 3, bidirectional=True),
    "classifier": lambda: zoo.classifier("lstm", 7, 4, 2, pooling="mean"),
    "dyck_rnn": lambda: zoo.dyck_rnn_model(2, 4),
}


def three_doors(build, folder):
    """The built model, the one `keras.saving.load_model` gives, the preset's."""
    keras.utils.set_random_seed(0)
    built = build()
    built.save(folder / "model.keras")
    loaded = keras.saving.load_model(folder / "model.keras", compile=False)
    from_preset = type(built).from_preset(built.save_to_preset(folder / "preset"))
    return built, loaded, from_preset


def rnn_layers(model):
    for layer in zoo.model_parts(model).recurrent:
        if isinstance(layer, keras.layers.Bidirectional):
            yield from (layer.forward_layer, layer.backward_layer)
        else:
            yield layer


@pytest.mark.parametrize("head", HEADS)
def test_every_door_gives_the_same_model(tmp_path, head):
    models = three_doors(HEADS[head], tmp_path)
    built = models[0]
    for model in models:
        assert type(model) is type(built) and isinstance(model, zoo.ZooModel)
        assert model.get_config() == built.get_config()
        assert [type(x) for x in rnn_layers(model)] == [zoo.RNN] * len(
            list(rnn_layers(built))
        )
        for got, expected in zip(
            keras.tree.flatten(model(IDS)), keras.tree.flatten(built(IDS)), strict=True
        ):
            np.testing.assert_array_equal(got, expected)


@on_tensorflow
@pytest.mark.parametrize("head", HEADS)
def test_every_door_makes_the_same_compiled_step_choice(tmp_path, head):
    for model in three_doors(HEADS[head], tmp_path):
        model.compile("adam", "mse", jit_compile=True, steps_per_execution=4)
        function = model.make_train_function()
        assert model.jit_compile is True and model.steps_per_execution == 4
        assert groups_steps(model) and hasattr(function, "group")  # one XLA call
        model.compile("adam", "mse", jit_compile=False, steps_per_execution=4)
        assert not hasattr(model.make_train_function(), "group")


def test_a_loaded_model_trains_as_the_built_one(tmp_path):
    # The same steps from the same weights give the same weights, grouped in
    # one XLA call on TensorFlow whichever door the model came in by. One
    # layer of mLSTM: each door compiles its group, and a second layer
    # nearly doubled the three compiles (the doors of two layers are
    # `test_every_door_gives_the_same_model`'s).
    build = functools.partial(zoo.language_model, "mlstm", 7, 4)
    built, loaded, from_preset = three_doors(build, tmp_path)
    x = np.random.default_rng(0).integers(1, 7, size=(16, 6)).astype("int32")
    y = np.roll(x, -1, axis=1)
    finals = []
    start = built.get_weights()
    for model in (built, loaded, from_preset):
        model.set_weights(start)
        model.compile(
            keras.optimizers.SGD(0.1),
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=keras.backend.backend() == "tensorflow",
            steps_per_execution=4,
        )
        model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
        finals.append(model.get_weights())
    for weights in finals[1:]:
        for got, expected in zip(weights, finals[0], strict=True):
            np.testing.assert_allclose(got, expected, atol=1e-6)
