import keras
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
    cell = model.get_layer("second_order_lstm_0").cell
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
    with pytest.raises(ValueError, match="second_order_lstm, mmrnn or mmlstm"):
        pabs.transition_matrices(zoo.language_model("lstm", 9, 4))
