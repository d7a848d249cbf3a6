"""`training.export --onnx`: the step for ONNX Runtime, equal to serve_step."""

import importlib.util

import pytest
import tensorflow as tf

from tests.training.runs.step_parity import worst_difference
from training.runs import onnx_step, saved_model

needs_onnx = pytest.mark.skipif(
    importlib.util.find_spec("tf2onnx") is None
    or importlib.util.find_spec("onnxruntime") is None,
    reason='tf2onnx or onnxruntime is not installed: pip install ".[test,onnx]" '
    "runs the ONNX tests",
)


@needs_onnx
@pytest.mark.parametrize("preset", ["lstm_dyck_m4", "mlstm_ptb_char", "diffstk_rnn_d2"])
def test_onnx_step_equals_serve_step_over_100_steps(tmp_path, preset):
    import onnxruntime

    export = saved_model.export_run(f"preset:{preset}", tmp_path / "out", onnx=True)
    loaded = tf.saved_model.load(str(export))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(export / saved_model.ONNX_FILE), options, ["CPUExecutionProvider"]
    )
    state_names = set(loaded.serve_initial_state(tf.constant(1)))
    assert {i.name for i in session.get_inputs()} == {"token_ids", *state_names}
    outputs = [o.name for o in session.get_outputs()]
    renamed = {name for name in outputs if name.startswith("next_")}
    assert renamed == {f"next_{name}" for name in state_names}

    def run(token, state):  # next_state_L_I back under serve_step's names
        ran = session.run(None, {"token_ids": token, **state})
        return {
            name.removeprefix("next_"): v for name, v in zip(outputs, ran, strict=True)
        }

    assert worst_difference(loaded, run) < 1e-5


def test_without_tf2onnx_the_export_is_one_line_and_leaves_nothing(
    tmp_path, monkeypatch
):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        onnx_step.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "tf2onnx" else real(name, *a),
    )
    with pytest.raises(ValueError, match=r'needs tf2onnx: pip install "\.\[onnx\]"'):
        saved_model.export_run("preset:lstm_dyck_m4", tmp_path / "out", onnx=True)
    assert list(tmp_path.iterdir()) == []  # no export, no partial folder
