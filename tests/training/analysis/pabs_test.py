import keras
import matplotlib.pyplot as plt
import numpy as np
import pytest

import zoo
from training.analysis import pabs


def test_a_matrix_and_itself_are_at_zero_degrees():
    matrix = np.random.default_rng(0).normal(size=(12, 3))
    np.testing.assert_allclose(pabs.principal_angles(matrix, matrix), 0.0, atol=1e-5)
    np.testing.assert_allclose(
        pabs.principal_angles(matrix, matrix @ np.diag([2.0, -1.0, 5.0])),
        0.0,
        atol=1e-5,
    )


def test_orthogonal_subspaces_are_at_ninety_degrees():
    basis = np.linalg.qr(np.random.default_rng(1).normal(size=(8, 8)))[0]
    mixing = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0], [1.0, 0.0, 1.0]])
    angles = pabs.principal_angles(basis[:, :3], basis[:, 3:6] @ mixing)
    np.testing.assert_allclose(angles, 90.0, atol=1e-5)


def test_angles_between_planes_at_a_known_angle():
    a = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    b = np.array([[1.0, 0.0], [0.0, np.cos(0.5)], [0.0, np.sin(0.5)]])
    np.testing.assert_allclose(pabs.principal_angles(a, b), [0.0, np.degrees(0.5)])


def test_second_order_cells_are_compared_pairwise():
    keras.utils.set_random_seed(2)
    model = zoo.language_model("second_order_lstm", 9, 4, num_cells=3)
    results = pabs.pairwise_angles(model)
    assert [r["pair"] for r in results] == [
        "cell 0 / cell 1",
        "cell 0 / cell 2",
        "cell 1 / cell 2",
    ]
    cell = zoo.model_parts(model).recurrent[0].cell
    kernel = cell.recurrent_kernel.numpy()  # [units, cells * 4 units]
    expected = pabs.principal_angles(kernel[:, :16].T, kernel[:, 16:32].T)
    np.testing.assert_allclose(results[0]["angles"], expected)
    assert results[0]["rank"] == 4 and all(0 < a <= 90 for a in expected)


def test_mmlstm_choices_are_compared_within_each_gate(tmp_path):
    keras.utils.set_random_seed(3)
    model = zoo.language_model("mmlstm", 9, 6, num_choices=2)
    results = pabs.pairwise_angles(model)
    assert [r["group"] for r in results] == ["gate i", "gate f", "gate c", "gate o"]
    assert all(r["rank"] == 3 for r in results)  # top units // 2 of square matrices
    assert pabs.plot(results, tmp_path / "pabs.png").is_file()


def test_a_model_without_transition_matrices_is_refused():
    with pytest.raises(ValueError, match="lstm, second_order_lstm, mmrnn or mmlstm"):
        pabs.transition_matrices(zoo.language_model("gru", 9, 4))


def test_an_lstm_has_one_transition_matrix_and_no_pair_within():
    keras.utils.set_random_seed(4)
    model = zoo.language_model("lstm", 9, 4)
    ((layer, group, matrices),) = pabs.transition_matrices(model)
    (recurrent,) = zoo.model_parts(model).recurrent
    kernel = recurrent.cell.recurrent_kernel.numpy()  # [u, 4u]
    assert (layer, group, list(matrices)) == ("lstm_0", "cell", ["recurrent kernel"])
    np.testing.assert_array_equal(matrices["recurrent kernel"], kernel.T)
    with pytest.raises(ValueError, match="has one per layer: compare it with an"):
        pabs.pairwise_angles(model)


def numpy_angles(a, b, rank):
    """Principal angles in degrees by their definition: the cosines are the
    singular values of `Qa^T Qb`, Q the top `rank` left singular vectors."""
    qa = np.linalg.svd(a)[0][:, :rank]
    qb = np.linalg.svd(b)[0][:, :rank]
    cosines = np.linalg.svd(qa.T @ qb, compute_uv=False)
    return np.degrees(np.arccos(np.clip(cosines, -1, 1)))


def seeded_models(cell, units, seeds, **options):
    """One small language model of `cell` per seed, each built after
    `keras.utils.set_random_seed(seed)`."""
    models = []
    for seed in seeds:
        keras.utils.set_random_seed(seed)
        models.append(zoo.language_model(cell, 9, units, **options))
    return models


def test_cross_angles_pair_each_matrix_with_its_counterpart():
    models = seeded_models("second_order_lstm", 4, (5, 6), num_cells=2)
    results = pabs.cross_angles(*models)
    assert [(r["group"], r["pair"], r["rank"]) for r in results] == [
        ("cells", "cell 0", 4),
        ("cells", "cell 1", 4),
    ]
    a, b = (zoo.model_parts(m).recurrent[0].cell.recurrent_kernel for m in models)
    for cell, result in enumerate(results):
        block = slice(16 * cell, 16 * (cell + 1))  # cell s: columns 4u s..4u (s+1)
        expected = numpy_angles(a.numpy()[:, block].T, b.numpy()[:, block].T, 4)
        np.testing.assert_allclose(result["angles"], expected, atol=1e-4)
        assert min(result["angles"]) > 1  # two seeds: no direction shared


def test_cross_angles_of_square_choices_use_the_top_half():
    models = seeded_models("mmrnn", 6, (7, 8), num_choices=2)
    results = pabs.cross_angles(*models)
    assert [(r["pair"], r["rank"]) for r in results] == [("W[0]", 3), ("W[1]", 3)]
    a, b = (zoo.model_parts(m).recurrent[0].cell.choice_kernels for m in models)
    a, b = a.numpy(), b.numpy()
    expected = numpy_angles(a[:, 6:12].T, b[:, 6:12].T, 3)  # W[1]
    np.testing.assert_allclose(results[1]["angles"], expected, atol=1e-4)


def keras_lstm_model(units=4):
    inputs = keras.Input((None, 3))
    return keras.Model(inputs, keras.layers.LSTM(units)(inputs))


@pytest.mark.parametrize(
    "build",
    [
        lambda: zoo.language_model("lstm", 9, 4, num_layers=2),
        lambda: zoo.language_model("second_order_lstm", 9, 4, num_cells=3),
        lambda: zoo.language_model("mmlstm", 9, 6, num_choices=2),
        keras_lstm_model,
    ],
    ids=["lstm", "second_order_lstm", "mmlstm", "keras_lstm"],
)
def test_a_model_against_itself_is_at_zero_degrees(build):
    keras.utils.set_random_seed(9)
    model = build()
    results = pabs.cross_angles(model, model)
    assert results and all(r["rank"] > 1 for r in results)
    for result in results:
        np.testing.assert_allclose(result["angles"], 0.0, atol=1e-3)


@pytest.mark.parametrize(
    "other, shapes",
    [
        (lambda: zoo.language_model("lstm", 9, 6), "lstm_0 cell: 1 x (24, 6)"),
        (
            lambda: zoo.language_model("second_order_lstm", 9, 4, num_cells=2),
            "second_order_lstm_0 cells: 2 x (16, 4)",
        ),
        (
            lambda: zoo.language_model("lstm", 9, 4, num_layers=2),
            "lstm_0 cell: 1 x (16, 4), lstm_1 cell: 1 x (16, 4)",
        ),
    ],
)
def test_models_of_other_architectures_are_refused_naming_both(other, shapes):
    lstm = zoo.language_model("lstm", 9, 4)
    with pytest.raises(ValueError) as error:
        pabs.cross_angles(lstm, other())
    message = str(error.value)
    assert "compares models of one architecture" in message
    assert "with lstm_0 cell: 1 x (16, 4) and " in message and shapes in message
    assert "\n" not in message


def test_summary_pools_every_pair():
    results = [{"angles": [10.0, 30.0]}, {"angles": [20.0, 80.0, 90.0]}]
    assert pabs.summary(results) == {
        "pairs": 2,
        "angles": 5,
        "min": 10.0,
        "median": 30.0,
        "max": 90.0,
    }


def test_a_baseline_is_drawn_dashed_in_each_pairs_colour(tmp_path, monkeypatch):
    keras.utils.set_random_seed(10)
    trained = pabs.pairwise_angles(zoo.language_model("mmlstm", 9, 6, num_choices=2))
    initial = pabs.pairwise_angles(zoo.language_model("mmlstm", 9, 6, num_choices=2))
    drawn = []
    monkeypatch.setattr(pabs.plots, "save", lambda fig, path: drawn.append(fig))
    pabs.plot(trained, tmp_path / "pabs.png", baseline=initial)
    (ax,) = drawn[0].axes
    solid, dashed = ax.lines[0::2], ax.lines[1::2]
    assert len(solid) == len(dashed) == 4
    for line, base, result in zip(solid, dashed, initial, strict=True):
        assert base.get_linestyle() == "--" and base.get_color() == line.get_color()
        np.testing.assert_array_equal(base.get_ydata(), result["angles"])
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert labels[-1] == "dashed: at initialization" and len(labels) == 5
    plt.close(drawn[0])
