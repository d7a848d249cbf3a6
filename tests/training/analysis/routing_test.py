import keras
import numpy as np
import pytest

import zoo
from training.analysis import routing


def second_order_model():
    """Token 1 is routed to cell 1, token 2 to cell 0 (hand-set attention)."""
    keras.utils.set_random_seed(4)
    model = zoo.language_model("second_order_lstm", 4, 3, embedding_dim=2, num_cells=2)
    embedding = np.zeros((4, 2), "float32")
    embedding[1], embedding[2] = [1.0, 0.0], [0.0, 1.0]
    parts = zoo.model_parts(model)
    parts.embedding.embeddings.assign(embedding)
    cell = parts.recurrent[0].cell
    cell.attention_kernel.assign(np.array([[-3.0, 3.0], [2.0, -2.0]], "float32"))
    return model


def test_hand_set_attention_picks_the_set_cell():
    ids = np.array([[1, 2, 2, 1], [2, 1, 3, 3]])
    ((layer, groups, weights),) = routing.routing_weights(second_order_model(), ids)
    assert layer == "second_order_lstm_0" and groups == ["alpha"]
    assert weights.shape == (2, 4, 1, 2)
    winners = weights[..., 0, :].argmax(-1)
    np.testing.assert_array_equal(winners[0], [1, 0, 0, 1])
    np.testing.assert_array_equal(winners[1, :2], [0, 1])
    np.testing.assert_allclose(
        weights[0, 0, 0],
        [np.exp(-6) / (1 + np.exp(-6)), 1 / (1 + np.exp(-6))],
        rtol=1e-5,
    )
    np.testing.assert_allclose(weights[1, 2:, 0], 0.5)  # token 3 embeds to zero


def test_mmlstm_keys_end_in_the_layer_s_final_key_state():
    keras.utils.set_random_seed(5)
    model = zoo.language_model("mmlstm", 6, 4, num_choices=3)
    ids = np.array([[1, 4, 2, 5, 3]])
    ((_, groups, weights),) = routing.routing_weights(model, ids)
    assert groups == ["key i", "key f", "key c", "key o"]
    parts = zoo.model_parts(model)
    (layer,), embedded = parts.recurrent, parts.embedding(ids)
    final = keras.layers.RNN(layer.cell, return_state=True)(embedded)[-1]
    np.testing.assert_allclose(weights[0, -1].reshape(-1), final[0], atol=1e-6)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-6)


def test_mean_weight_per_token_and_its_table():
    weights = np.array([[[[0.9, 0.1]], [[0.2, 0.8]], [[0.7, 0.3]]]])
    per_token = routing.mean_weight_per_token([["(a", "a)", "(a"]], weights)
    assert list(per_token) == ["(a", "a)"]
    count, mean = per_token["(a"]
    assert count == 2
    np.testing.assert_allclose(mean, [[0.8, 0.2]])
    rows = routing.table_rows("layer", ["alpha"], per_token)
    assert rows[1] == {
        "layer": "layer",
        "group": "alpha",
        "token": "a)",
        "count": 1,
        "winner": 1,
        "weight_0": 0.2,
        "weight_1": 0.8,
    }


def test_plot_writes_a_png(tmp_path):
    weights = np.random.default_rng(0).dirichlet([1, 1], size=(2, 3, 1))
    path = routing.plot(
        [["the", "cat", "sat"], ["a", "dog"]],
        weights,
        ["alpha"],
        tmp_path / "r.png",
        "t",
    )
    assert path.stat().st_size > 0


def test_a_long_title_is_wrapped_inside_the_figure(drawn_figures):
    # A preset's name made the title wider than the axes the legend narrows.
    title = (
        "Routing: second_order_lstm (preset:second_order_lstm_dyck_m4), "
        "second_order_lstm_0"
    )
    tokens = [["START", *["(a", "(b", "b)", "a)"] * 10]] * 4
    weights = np.random.default_rng(0).dirichlet([1, 1], size=(4, 41, 1))
    routing.plot(tokens, weights, ["alpha"], "r.png", title)
    (fig,) = drawn_figures
    (ax,) = fig.axes
    box, frame = ax.title.get_window_extent(), fig.bbox
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and box.y1 <= frame.y1
    assert ax.title.get_text() == title  # wrapped when drawn, not rewritten


def test_a_model_without_routing_is_refused():
    with pytest.raises(ValueError, match="second_order_lstm, mmrnn or mmlstm"):
        routing.routing_weights(zoo.language_model("lstm", 5, 3), np.ones((1, 2)))
