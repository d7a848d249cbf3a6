"""The Keras contract every zoo cell passes, as a base class for test classes.

A cell's test module subclasses `CellContract` in a class named `Test...` and
defines `make_cell(self)` (a fresh, seeded cell) and, for cells that do not
take float vectors, `make_inputs(self)`. Each test compares the cell inside a
Keras wrapper against the same weights run another way, so a cell that
mishandles its state, config, mask or dtype fails. Nothing here is
TensorFlow's: `tests/zoo/backend_runs.py` runs the contract on JAX and torch.
"""

import keras
import numpy as np
import pytest

from tests.zoo.gradients import value_and_gradients

BATCH, TIME, FEATURES = 3, 5, 4
ATOL = 1e-5
# How far a mixed-precision run may be from float32 with the same weights
# after TIME steps at these shapes. bfloat16 keeps 8 significant bits
# (relative step 2**-8), float16 11 (2**-11); the largest differences seen
# were 0.033 (bfloat16, DiffStk-MRNN, whose f1 scales by 1.7) and 0.0025
# (float16), so each bound is about 1.5-2x the worst cell.
MIXED_ATOL = {"mixed_bfloat16": 0.05, "mixed_float16": 0.005}


def _rnn(cell, **kwargs):
    return keras.layers.RNN(cell, return_sequences=True, **kwargs)


def _copy_weights(source, target):
    target.set_weights(source.get_weights())


def _numpy(outputs):
    """A layer's outputs (a tensor or a list of them) as NumPy arrays.

    `np.asarray` cannot read torch's tensors that require a gradient (every
    output of a layer with weights); Keras's conversion reads any backend's.
    """
    return keras.tree.map_structure(keras.ops.convert_to_numpy, outputs)


class CellContract:
    def make_cell(self):
        raise NotImplementedError

    def make_inputs(self):
        rng = np.random.default_rng(0)
        return rng.normal(size=(BATCH, TIME, FEATURES)).astype("float32")

    def setup_method(self, method):
        keras.utils.set_random_seed(0)

    def test_config_round_trip(self):
        cell = self.make_cell()
        config = cell.get_config()
        clone = type(cell).from_config(config)
        assert clone.get_config() == config

    def test_save_and_load(self, tmp_path):
        x = self.make_inputs()
        inputs = keras.Input(shape=x.shape[1:], dtype=str(x.dtype))
        model = keras.Model(inputs, _rnn(self.make_cell())(inputs))
        expected = _numpy(model(x))
        path = tmp_path / "model.keras"
        model.save(path)
        restored = keras.models.load_model(path)
        np.testing.assert_array_equal(_numpy(restored(x)), expected)
        restored_cell = restored.layers[-1].cell
        assert type(restored_cell) is type(model.layers[-1].cell)

    def test_bidirectional(self):
        x = self.make_inputs()
        layer = keras.layers.Bidirectional(_rnn(self.make_cell()))
        output = _numpy(layer(x))
        forward = _numpy(layer.forward_layer(x))
        backward = _numpy(layer.backward_layer(x))
        units = forward.shape[-1]
        np.testing.assert_allclose(output[..., :units], forward, atol=ATOL)
        np.testing.assert_allclose(output[..., units:], backward[:, ::-1], atol=ATOL)
        # The backward layer reads the sequence in reverse: same cell config,
        # different result.
        assert not np.allclose(output[..., :units], output[..., units:])

    def test_stacked_cells(self):
        x = self.make_inputs()
        first, second = self.make_cell(), self.make_cell()
        if getattr(first, "takes_token_ids", False):
            pytest.skip("a cell that takes token ids cannot read another's output")
        stacked = _rnn(keras.layers.StackedRNNCells([first, second]))
        output = _numpy(stacked(x))
        layer_one, layer_two = _rnn(self.make_cell()), _rnn(self.make_cell())
        hidden = layer_one(x)
        layer_two(hidden)
        _copy_weights(first, layer_one.cell)
        _copy_weights(second, layer_two.cell)
        np.testing.assert_allclose(output, _numpy(layer_two(layer_one(x))), atol=ATOL)

    def test_stateful_and_reset_state(self):
        x = self.make_inputs()
        full = _rnn(self.make_cell())
        expected = _numpy(full(x))
        stateful = _rnn(self.make_cell(), stateful=True)
        stateful(x[:, :2])
        _copy_weights(full.cell, stateful.cell)
        stateful.reset_state()
        first = _numpy(stateful(x[:, :2]))
        second = _numpy(stateful(x[:, 2:]))
        np.testing.assert_allclose(
            np.concatenate([first, second], axis=1), expected, atol=ATOL
        )
        stateful.reset_state()
        np.testing.assert_allclose(
            _numpy(stateful(x[:, 2:])), _numpy(full(x[:, 2:])), atol=ATOL
        )

    def test_return_state_and_initial_state(self):
        x = self.make_inputs()
        cell = self.make_cell()
        layer = _rnn(cell, return_state=True)
        output, *states = _numpy(layer(x))
        assert len(states) == len(keras.tree.flatten(cell.state_size))
        head, *head_states = _numpy(layer(x[:, :2]))
        tail, *_ = _numpy(layer(x[:, 2:], initial_state=head_states))
        np.testing.assert_allclose(
            np.concatenate([head, tail], axis=1), output, atol=ATOL
        )
        # The last output is the hidden state, one of the returned states.
        last = output[:, -1]
        assert any(
            s.shape == last.shape and np.allclose(s, last, atol=ATOL) for s in states
        )

    def test_masking(self):
        x = self.make_inputs()
        mask = np.ones(x.shape[:2], bool)
        mask[0, 3:] = False
        layer = keras.layers.RNN(self.make_cell(), return_state=True)
        last, *states = _numpy(layer(x, mask=mask))
        short_last, *short_states = _numpy(layer(x[:1, :3]))
        np.testing.assert_allclose(last[0], short_last[0], atol=ATOL)
        for state, short in zip(states, short_states, strict=True):
            np.testing.assert_allclose(state[0], short[0], atol=ATOL)
        unmasked_last, *_ = _numpy(layer(x))
        assert not np.allclose(last[0], unmasked_last[0])
        np.testing.assert_allclose(last[1:], unmasked_last[1:], atol=ATOL)

    @pytest.mark.parametrize("policy", sorted(MIXED_ATOL))
    def test_mixed_precision(self, policy):
        # Finite outputs and gradients, close to float32, and every state in
        # the compute dtype, also when fed back as an initial state.
        x = self.make_inputs()
        reference = _rnn(self.make_cell())
        expected = _numpy(reference(x))
        previous = keras.mixed_precision.global_policy()
        keras.mixed_precision.set_global_policy(policy)
        try:
            layer = _rnn(self.make_cell(), return_state=True)
            layer(x)
            # The float32 run's weights: the variables stay float32 here.
            layer.set_weights(reference.get_weights())
            output, *states = layer(x)
            _, gradients = value_and_gradients(
                lambda: keras.ops.sum(keras.ops.cast(layer(x)[0], "float32")),
                layer.trainable_weights,
            )
            # The cell itself, stepped: each step's states keep the dtypes
            # of the initial states (keras.layers.RNN would cast them).
            steps = [layer.get_initial_state(x.shape[0])]
            for t in range(2):
                steps.append(layer.cell(x[:, t], steps[-1])[1])
            _, *head_states = layer(x[:, :2])
            _, *tail_states = layer(x[:, 2:], initial_state=head_states)
        finally:
            keras.mixed_precision.set_global_policy(previous)
        dtypes = [keras.backend.standardize_dtype(t.dtype) for t in (output, *states)]
        assert dtypes == [keras.mixed_precision.Policy(policy).compute_dtype] * len(
            dtypes
        )
        head_dtypes = [keras.backend.standardize_dtype(s.dtype) for s in head_states]
        tail_dtypes = [keras.backend.standardize_dtype(s.dtype) for s in tail_states]
        assert head_dtypes == tail_dtypes == dtypes[1:]
        for step in steps:
            step_dtypes = [keras.backend.standardize_dtype(s.dtype) for s in step]
            assert step_dtypes == dtypes[1:]
        output = _numpy(keras.ops.cast(output, "float32"))
        assert np.all(np.isfinite(output))
        for gradient in gradients:
            assert np.all(np.isfinite(_numpy(gradient)))
        np.testing.assert_allclose(output, expected, atol=MIXED_ATOL[policy])

    def test_wrong_input_rank(self):
        x = self.make_inputs()
        with pytest.raises(ValueError, match="inputs"):
            keras.layers.RNN(self.make_cell())(x[:, 0])
