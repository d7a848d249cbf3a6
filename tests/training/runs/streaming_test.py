"""The streaming endpoints of an export (`training.runs.streaming`)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tensorflow as tf

from training.runs import saved_model

PROBE = Path(__file__).with_name("streaming_probe.py")
TEXT = "(a (b b) a)"
IDS = [1, 3, 4, 6, 5]  # START, then TEXT's ids: what serve_text reads


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    out = tmp_path_factory.mktemp("streaming") / "export"
    return saved_model.export_run("preset:lstm_dyck_m4", out)


@pytest.mark.processes
def test_step_by_step_equals_serve_text_and_generate_returns_text(export, tmp_path):
    out = tmp_path / "probe.json"
    done = subprocess.run(
        [sys.executable, str(PROBE), str(export), TEXT, str(out), json.dumps(IDS)],
        cwd=tmp_path,  # a fresh process that imports tensorflow alone
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    probe = json.loads(out.read_text())
    assert probe["steps"] == len(IDS) and probe["worst"] < 1e-5
    assert probe["texts"] == probe["again"]  # the seed reproduces
    assert probe["texts"][0].startswith(TEXT + " ")
    assert probe["texts"][1].startswith("(a ") and probe["lengths"][1] >= 1
    assert len(probe["texts"][0].split()) == 4 + probe["lengths"][0]


@pytest.mark.processes
def test_saved_model_cli_lists_every_endpoint_with_its_shapes(export):
    cli = shutil.which("saved_model_cli") or str(
        Path(sys.executable).parent / "saved_model_cli"
    )
    shown = subprocess.run(
        [cli, "show", "--dir", str(export), "--all"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    text = shown.stdout
    for endpoint in ("serve", "serve_text", "serve_initial_state", "serve_step"):
        assert f"signature_def['{endpoint}']" in text
    assert "signature_def['serve_generate']" in text
    step = text.split("signature_def['serve_step']")[1].split("signature_def[")[0]
    assert "inputs['state_0_0']" in step and "shape: (-1, 12)" in step
    assert "outputs['log_probabilities']" in step and "shape: (-1, 7)" in step


def _generate(loaded, texts=(TEXT,), max_length=4, temperature=1.0, top_k=2, seed=0):
    return loaded.serve_generate(
        tf.constant(list(texts), tf.string),
        tf.constant(max_length),
        tf.constant(temperature, tf.float32),
        tf.constant(top_k),
        tf.constant(seed),
    )


def _step(loaded, ids=(1,), rows=1, width=12):
    state = tf.zeros([rows, width])
    return loaded.serve_step(tf.constant(list(ids), tf.int32), state, tf.zeros([1, 12]))


@pytest.mark.processes
@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: _generate(m, texts=("(a (c",)), "not in the vocabulary"),
        (lambda m: _generate(m, max_length=0), "max_length must be >= 1"),
        (lambda m: _generate(m, max_length=10**6 + 1), "max_length must be <= 1000000"),
        (lambda m: _generate(m, top_k=0), "top_k must be >= 1"),
        (lambda m: _generate(m, temperature=float("nan")), "temperature must be"),
        (lambda m: _generate(m, texts=()), "the batch is empty"),
        (lambda m: _step(m, ids=(9,)), r"token ids must be in \[0, 7\)"),
        (
            lambda m: _step(m, rows=2),
            "state_0_0 has a batch other than that of token_ids",
        ),
        (lambda m: _step(m, ids=(), rows=0), "the batch is empty"),
        (lambda m: m.serve_initial_state(tf.constant(0)), "the batch is empty"),
    ],
)
def test_bad_input_is_one_clear_error(export, call, message):
    loaded = tf.saved_model.load(str(export))
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        call(loaded)


def test_a_state_of_the_wrong_width_is_refused_by_the_signature(export):
    loaded = tf.saved_model.load(str(export))
    with pytest.raises((TypeError, ValueError), match="state_0_0|Binding inputs"):
        _step(loaded, width=5)
