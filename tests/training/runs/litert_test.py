"""`training.export --litert`: the step in LiteRT builtins, equal to serve_step."""

import importlib.util

import pytest
import tensorflow as tf

from tests.training.runs.step_parity import worst_difference
from training.runs import saved_model

needs_litert = pytest.mark.skipif(
    importlib.util.find_spec("ai_edge_litert") is None,
    reason='ai-edge-litert is not installed: pip install ".[test,litert]" runs '
    "the LiteRT tests (a wheel exists for CPython 3.11 on manylinux x86_64)",
)


@needs_litert
@pytest.mark.parametrize("preset", ["lstm_dyck_m4", "mlstm_ptb_char", "diffstk_rnn_d2"])
def test_litert_step_equals_serve_step_over_100_steps(tmp_path, preset):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    # LiteRT's builtin kernels, not the XNNPACK delegate it adds by default:
    # with it one of these three steps ended 1.0014e-5 from serve_step.
    resolver = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES

    export = saved_model.export_run(f"preset:{preset}", tmp_path / "out", litert=True)
    loaded = tf.saved_model.load(str(export))
    interpreter = Interpreter(
        str(export / saved_model.LITERT_FILE),
        num_threads=1,
        experimental_op_resolver_type=resolver,
    )
    runner = interpreter.get_signature_runner()
    state_names = set(loaded.serve_initial_state(tf.constant(1)))
    assert set(runner.get_input_details()) == {"token_ids", *state_names}
    worst = worst_difference(
        loaded, lambda token, state: runner(token_ids=token, **state)
    )
    assert worst < 1e-5, worst
