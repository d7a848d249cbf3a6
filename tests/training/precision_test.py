"""`train.precision`: models built under the policy, loss scaling, reloading."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.training.tiny import tiny_recipe
from training.runs import runs, saved_model
from training.tasks import make_task, recipes

MIXED = ("mixed_bfloat16", "mixed_float16")
IDS = np.array([[1, 3, 4, 6, 5], [1, 4, 3, 5, 6]], "int32")


def _compute_dtypes(model):
    return {
        layer.name: layer.dtype_policy.compute_dtype
        for layer in model.layers
        if layer.weights
    }


@pytest.mark.parametrize("kind", ["dyck", "recognition", "closing_bracket"])
@pytest.mark.parametrize("precision", MIXED)
def test_models_compute_in_the_policy_with_float32_weights_and_outputs(kind, precision):
    recipe = tiny_recipe(kind, extra=[f"train.precision={precision}"])
    model = make_task(recipe).build_model()
    assert keras.config.dtype_policy().name == "float32"  # restored
    compute = _compute_dtypes(model)
    heads = {layer.name for layer in zoo.model_parts(model).heads.values()}
    low = {name: dtype for name, dtype in compute.items() if name not in heads}
    assert low and set(low.values()) == {precision.removeprefix("mixed_")}
    assert {w.dtype for w in model.weights} == {"float32"}
    outputs = model(IDS)
    for output in keras.tree.flatten(outputs):
        assert keras.backend.standardize_dtype(output.dtype) == "float32"


def test_tied_decoder_gives_float32_logits_under_a_mixed_policy():
    recipe = tiny_recipe(
        "dyck",
        extra=["train.precision=mixed_bfloat16", "model.tie_embeddings=true"],
    )
    model = make_task(recipe).build_model()
    assert keras.backend.standardize_dtype(model(IDS).dtype) == "float32"


class Optimizer(keras.callbacks.Callback):
    """Keeps the optimizer the run's model trained with."""

    def on_train_end(self, logs=None):
        self.optimizer = self.model.optimizer


@pytest.fixture(scope="module")
def mixed_runs(tmp_path_factory):
    """`runs_of(precision)`: the run directory, metrics and optimizer of the
    tiny Dyck recipe trained under `precision` (each trained once here)."""
    made = {}

    def runs_of(precision):
        if precision not in made:
            recipe = tiny_recipe("dyck", extra=[f"train.precision={precision}"])
            run_dir = tmp_path_factory.mktemp(precision) / "run"
            kept = Optimizer()
            metrics = runs.train_run(recipe, run_dir, callbacks=[kept])
            made[precision] = run_dir, metrics, kept.optimizer
        return made[precision]

    return runs_of


def test_float16_training_scales_the_loss(mixed_runs):
    run_dir, metrics, optimizer = mixed_runs("mixed_float16")
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    losses = np.loadtxt(run_dir / runs.LOG, delimiter=",", skiprows=1, ndmin=2)
    assert np.isfinite(losses).all() and np.isfinite(metrics["test"]["cross_entropy"])
    _, _, optimizer = mixed_runs("mixed_bfloat16")
    assert not isinstance(optimizer, keras.optimizers.LossScaleOptimizer)


@pytest.mark.parametrize("precision", MIXED)
def test_mixed_run_reloads_under_either_policy_and_exports_float32(
    precision, mixed_runs, tmp_path
):
    run_dir, metrics, _ = mixed_runs(precision)
    assert np.isfinite(metrics["test"]["cross_entropy"])

    own = runs.load_run(run_dir)
    assert zoo.model_parts(own.model).recurrent[-1].dtype_policy.name == precision
    full = runs.load_run(run_dir, precision="float32")
    assert full.recipe.train.precision == "float32"
    assert {layer.dtype_policy.name for layer in full.model.layers} == {"float32"}
    for mixed, single in zip(
        own.model.get_weights(), full.model.get_weights(), strict=True
    ):
        np.testing.assert_array_equal(mixed, single)
    atol = {"mixed_bfloat16": 0.1, "mixed_float16": 0.01}[precision]
    np.testing.assert_allclose(own.model(IDS), full.model(IDS), atol=atol)

    saved = saved_model.export_run(run_dir, tmp_path / "export")
    loaded = tf.saved_model.load(str(saved))
    served = loaded.serve(tf.constant(IDS))
    assert served.dtype == tf.float32
    np.testing.assert_allclose(served, full.model(IDS), atol=1e-5)


def test_unknown_precision_is_one_line():
    with pytest.raises(recipes.RecipeError, match=r"^Unknown train.precision 'half'"):
        tiny_recipe("dyck", extra=["train.precision=half"])


def test_load_run_refuses_an_unknown_precision(dyck_run):
    with pytest.raises(
        ValueError, match=r"^Unknown train.precision 'float64'; expected"
    ):
        runs.load_run(dyck_run, precision="float64")
