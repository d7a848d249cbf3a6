"""Training on the JAX backend, checked against TensorFlow in this process.

The JAX tests train in one `KERAS_BACKEND=jax` subprocess
(`tests/training/jax_runs.py`; the backend is fixed per process) and are
skipped, saying why, where jax is not installed (`pip install ".[test,jax]"`
runs them, as `.ci/run` does).
"""

import json
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.readme_test import bash_lines
from tests.training import jax_runs
from tests.training.reproduce_test import _metrics, _write_record
from tests.training.tiny import TINY_TABLE
from tests.zoo.backend_processes import ROOT, needs, quiet_environment, run_module
from tests.zoo.backend_runs import stateful_checks
from training import reproduce
from training.core import backends, compile_mode, fitting
from training.reproduction import records, table_runs, table_schema
from training.runs import generation, runs
from training.runs.saved_model import LITERT_FILE, MARKER
from training.tasks import recipes

needs_jax = needs("jax")


@pytest.fixture(scope="module")
def jax_out(tmp_path_factory):
    """The folder `jax_runs` filled on the JAX backend, and what it printed."""
    out = tmp_path_factory.mktemp("jax")
    # JAX's float64 truncation warning is an error: the runs ask for no float64
    # (`backends.widest_float`), so it would point at the code that did.
    no_float64 = "error:Explicitly requested dtype float64"
    return out, run_module(
        "jax", "tests.training.jax_runs", out, python_options=("-W", no_float64)
    )


@pytest.mark.processes
@needs_jax
def test_keras_files_trained_on_jax_predict_the_same_on_tensorflow(jax_out):
    out, _ = jax_out
    assert keras.backend.backend() == "tensorflow"
    on_jax = np.load(out / "jax.npz")
    dyck = keras.models.load_model(out / "dyck" / runs.BEST)
    np.testing.assert_allclose(
        dyck.predict(jax_runs.DYCK_IDS, verbose=0), on_jax["dyck"], atol=1e-5
    )
    recognizer = runs.load_run(out / "recognition").model  # rebuilt, weights loaded
    outputs = recognizer.predict(jax_runs.RECOGNITION_IDS, verbose=0)
    for name in ("next_symbol", "accept"):
        np.testing.assert_allclose(
            outputs[name], on_jax[f"recognition_{name}"], atol=1e-5
        )


@pytest.mark.processes
@needs_jax
def test_jax_runs_record_their_backend_and_xla(jax_out):
    out, _ = jax_out
    for run_dir in (out / "dyck", out / "recognition", out / "lm" / "run"):
        metrics = runs.read_json(run_dir / runs.METRICS)
        assert metrics[runs.BACKEND]["name"] == "jax"
        assert metrics[runs.BACKEND]["version"].startswith("0.")
        assert metrics[runs.JIT_COMPILE] == {
            "used": True,
            "reason": "auto: Keras's choice on the jax backend",
        }
        assert metrics[runs.STEPS_PER_EXECUTION] == {
            "used": 1,
            "reason": "auto: one step a call on the jax backend",
        }


@pytest.mark.processes
@needs_jax
def test_stateful_language_model_reads_the_same_on_both_backends(jax_out):
    # Truncated BPTT trained on JAX; scoring with the state carried, dynamic
    # evaluation (gradients), sentence scores and greedy sampling agree with
    # TensorFlow's on the same weights.
    out, _ = jax_out
    checks = json.loads((out / "checks.json").read_text())
    assert checks == {
        "carried": True,
        "reset": True,
    }  # zoo.zoo_model.carry_state_on_jax
    assert stateful_checks() == checks  # as on TensorFlow
    on_jax = np.load(out / "jax.npz")
    on_tensorflow = jax_runs.language_model_results(out / "lm" / "run")
    for name, value in on_tensorflow.items():
        np.testing.assert_allclose(value, on_jax[name], rtol=1e-4, err_msg=name)
    assert on_tensorflow["lm_dynamic"][1] != on_tensorflow["lm_dynamic"][0]
    sample = generation.generate(out / "lm" / "run", jax_runs.PROMPT, 6, top_k=1)
    assert json.loads((out / "sample.json").read_text()) == sample


@pytest.mark.processes
@needs_jax
def test_a_run_trained_on_jax_exports_a_saved_model_that_serves_text(jax_out):
    out, printed = jax_out
    saved = out / "dyck_saved"
    assert printed.strip().endswith(
        "(written by the TensorFlow backend in a subprocess, from the run's "
        ".keras weights; Keras runs on jax here)"
    )
    marker = json.loads((saved / MARKER).read_text())
    assert marker["backend"] == "tensorflow" and marker["exported_from"] == "jax"
    assert (saved / LITERT_FILE).stat().st_size > 0  # asked for
    loaded = tf.saved_model.load(str(saved))
    logits = np.load(out / "jax.npz")["dyck"]  # [START] + ids, on JAX
    np.testing.assert_allclose(
        loaded.serve(tf.constant(jax_runs.DYCK_IDS)), logits, atol=1e-5
    )
    scored = loaded.serve_text(tf.constant(["(a (b b) a)", "(b (a a) b)"]))
    np.testing.assert_allclose(
        scored["log_probabilities"], tf.nn.log_softmax(logits), atol=1e-5
    )


@pytest.mark.processes
def test_a_missing_jax_is_one_line_saying_how_to_install_it(tmp_path):
    # Runs without jax too: `sys.modules["jax"] = None` hides an installed one.
    script = (
        "import runpy, sys; sys.modules['jax'] = None; "
        "sys.argv = ['-m', 'tiny_dyck_lstm', '--run-dir', sys.argv[1]]; "
        "runpy.run_module('training.train', run_name='__main__', alter_sys=True)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "run")],
        cwd=ROOT,
        env=quiet_environment(KERAS_BACKEND="jax"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: The Keras backend 'jax' (KERAS_BACKEND=jax) needs the jax package, "
        f"which is not installed for {sys.executable}; install it with: "
        'pip install "rnn-zoo[jax]" (from a checkout: pip install ".[jax]")'
    ]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_missing_backend_is_an_import_error_in_a_library(backend, monkeypatch):
    monkeypatch.setattr(backends, "is_installed", lambda name: False)
    monkeypatch.setattr(sys, "argv", ["some_script.py"])
    how = f'"rnn-zoo[{backend}]" (from a checkout: pip install ".[{backend}]")'
    with pytest.raises(backends.BackendUnavailable, match=re.escape(how) + "$"):
        backends.require(backend)


def test_reproduce_refuses_a_backend_that_is_not_installed(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(backends, "is_installed", lambda name: name != "jax")
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main(["mali_d2", "--backend", "jax", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.endswith('pip install ".[jax]")') and "jax package" in line


@needs_jax
def test_widest_float_is_the_widest_the_backend_computes_in(monkeypatch):
    import jax

    assert backends.widest_float() == "float64"  # TensorFlow
    monkeypatch.setattr(backends, "name", lambda: "jax")
    assert backends.widest_float() == "float32"  # JAX's default: 32 bits
    jax.config.update("jax_enable_x64", True)
    try:
        assert backends.widest_float() == "float64"
    finally:
        jax.config.update("jax_enable_x64", False)


def test_the_docs_jax_example_trains_with_xla_as_the_docs_say(monkeypatch):
    # docs/scaling.md: XLA on JAX unless a recipe says false, as tiny_dyck_lstm
    # does for TensorFlow; its JAX example asks for "auto", Keras's XLA.
    page = (ROOT / "docs" / "scaling.md").read_text()
    command = "KERAS_BACKEND=jax python -m training.train "
    (line,) = [line for line in bash_lines(page) if line.startswith(command)]
    name, *words = line.removeprefix(command).split()
    overrides = [w for w in words if "=" in w and not w.startswith("--")]
    recipe = recipes.resolve(name, "small", overrides)
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    choice = compile_mode.choose(recipe.train.jit_compile, recipe.model.units, 16, 10)
    assert choice == (True, "auto: Keras's choice on the jax backend")
    printed = f"XLA: on ({choice.reason})"
    assert f"`{printed}`" in " ".join(page.split())


def test_tf_distribute_is_refused_in_one_line_on_other_backends(monkeypatch):
    monkeypatch.setattr(backends, "name", lambda: "jax")
    recipe = recipes.resolve("tiny_dyck_lstm", "small", [])
    assert isinstance(fitting.distribution_strategy(recipe.train), backends.NoStrategy)
    train = recipe.with_values({"train.distribute": "mirrored"}).train
    with pytest.raises(ValueError, match=r"train.distribute='mirrored' uses tf.dis"):
        fitting.distribution_strategy(train)


@pytest.fixture
def tiny_table(tmp_path):
    """`TINY_TABLE` (two rows of `tiny_dyck_lstm`): its path and table."""
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TABLE)
    return str(path), table_schema.load_table(str(path))


def test_reproduce_trains_on_the_backend_asked_for_and_records_it(
    tiny_table, tmp_path, monkeypatch
):
    _, table = tiny_table
    started = {}

    class Process:
        def __init__(self, command, env, **kwargs):
            started.update(command=command, env=env)

    monkeypatch.setattr(table_runs.subprocess, "Popen", Process)
    run = table_schema.plan(table, tmp_path / "out", 1, ["small"])[0]
    job = table_runs.Job(run, threads=1, backend="jax")
    job.release()
    assert started["env"]["KERAS_BACKEND"] == "jax"
    assert started["command"][1:3] == ["-m", "training.train"]
    host = json.loads((run.run_dir / records.HOST).read_text())
    assert host["backend"] == "jax" and host["keras"]


def test_records_of_one_backend_are_not_used_for_another(
    tiny_table, tmp_path, capsys, monkeypatch
):
    path, table = tiny_table
    monkeypatch.setattr(backends, "is_installed", lambda name: True)
    results_dir = tmp_path / "results"
    tf_record = _write_record(results_dir, table, "small", 0, _metrics(0.5, 1.0))
    recipe = runs.read_recipe(tf_record / runs.RECIPE)
    assert records.RecordIndex(results_dir).find(recipe) == tf_record
    assert records.RecordIndex(results_dir, "jax").find(recipe) is None

    argv = ["--seeds", "1", "--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as exit_info:
        reproduce.main([path, *argv, "--results", str(results_dir), "--backend", "jax"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "holds tensorflow records (tiny/small/seed-0)" in err
    assert "(its default is results/jax)" in err

    out = tmp_path / "out_tf" / "runs" / "small" / "seed-0"  # a finished TF run
    out.mkdir(parents=True)
    (out / runs.METRICS).write_text(json.dumps(_metrics(0.5, 1.0)))
    argv = ["--seeds", "1", "--out", str(tmp_path / "out_tf")]
    with pytest.raises(SystemExit):
        reproduce.main(
            [path, *argv, "--results", str(tmp_path / "new"), "--backend", "jax"]
        )
    assert (
        "was trained on tensorflow; expected jax runs only" in capsys.readouterr().err
    )

    jax_metrics = {**_metrics(0.6, 0.9), "backend": {"name": "jax", "version": "0"}}
    jax_results = tmp_path / "results_jax"
    jax_record = _write_record(jax_results, table, "small", 0, jax_metrics)
    assert records.RecordIndex(jax_results, "jax").find(recipe) == jax_record
    assert records.RecordIndex(jax_results).find(recipe) is None
