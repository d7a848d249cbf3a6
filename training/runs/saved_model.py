"""A trained run as a SavedModel for inference (`export_run`).

`python -m training.export RUN_DIR OUT_DIR` and `python -m training.train`
write it. The SavedModel needs only `tensorflow` to load (an export from
before issue 44 also `import tensorflow_text`, which registers the ops of
its tokenizer). Its endpoints:

- `serve(token_ids)`: int32 `(batch, time)` -> the model's output: logits
  `(batch, time, vocab)` for a language model, the dict `next_symbol` /
  `accept` for a recognizer, closing-bracket probabilities for the Dyck-RNN,
  logits `(batch, time, classes)` for a tagger and `(batch, classes)` for a
  classifier.
  Ids outside `[0, vocabulary size)` are refused (`InvalidArgumentError`
  saying so; an embedding lookup would wrap a negative id around, and a GPU
  gives zeros for one too large); `time` 0 gives outputs with 0 steps.
- `serve_text(texts)`: a batch of strings of natural text, written in the
  conventions of the run's vocabulary (`zoo.text_conventions`: PTB's
  characters are `t h e _ c a t`; the Dyck and recognition tasks' brackets
  stay tokens separated by spaces, `"(a (b b) a)"`) and tokenized inside the
  graph (`zoo.tokenizer.Tokenizer.id_tensor`), -> a dict with
  `log_probabilities`
  `(batch, time, vocab)` (next-token log-probabilities; the text is read
  after the task's start token when it has one, so position 0 predicts the
  first token), `log_likelihood` `(batch,)` (of each whole string) and
  `lengths` `(batch,)` (tokens per string; rows are padded past it), plus
  `accept` `(batch,)` for a recognizer; the Dyck-RNN gives
  `closing_log_probabilities` `(batch, time, k)` instead of the first two.
  A tagger gives `labels` `(batch, time)` (the arg-max class of each token,
  -1 past a string's end) and `probabilities` `(batch, time, classes)`; a
  classifier `label` `(batch,)` and `probabilities` `(batch, classes)`.
  A token the vocabulary lacks fails the call with an
  `InvalidArgumentError` whose message names it (the tokenizer's
  `unknown_message`).
- `serve_text_unk(texts)`, where the vocabulary has an unknown token: the
  same, reading the tokens it lacks as `<unk>`.
- `serve_initial_state`, `serve_step` and (a language model)
  `serve_generate`: the streaming endpoints, `training.runs.streaming`.

Each endpoint is defined by the model's class (`zoo.serving`,
`model.serving_endpoints`): a class adds endpoints there, and nothing here
switches on the kind of model. The model is rebuilt in float32 whatever the
run's `train.precision` (its weights are float32 in every policy), so the
export computes and serves float32 on any device.

The SavedModel is always written by the TensorFlow backend: a process whose
Keras runs on another backend (`KERAS_BACKEND=jax`) exports in a
`python -m training.export` subprocess with `KERAS_BACKEND=tensorflow`
(`export_in_tensorflow`), which loads the run's `.keras` weights (the same
file on every backend) into the TensorFlow model; the export's
`zoo_export.json` and the printed line say so. Its graph is then the one a
TensorFlow-trained run exports, with the tokenizer's ops inside, rather
than Keras's JAX export (`jax2tf`), which cannot trace the tensorflow-text
tokenizer and the id checks.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import keras

from training.core import backends, interrupts
from training.runs import run_dirs, run_files, runs, streaming
from training.runs.litert import write_step
from training.runs.onnx_step import check_available, write_onnx
from zoo import serving

# What an unknown token's error adds (the endpoints are the model class's).
UNK_HINT = serving.UNK_HINT


def export_model(model, tokenizer, path, start_id=None, task=None):
    """Writes `model`'s SavedModel endpoints to `path`; returns the path.

    The endpoints are the model class's (`model.serving_endpoints`,
    `zoo.serving`): `serve`, `serve_text` and, where the vocabulary has an
    unknown token, `serve_text_unk`, plus any a class adds. `tokenizer` is a
    `zoo.tokenizer.Tokenizer` (a task's `tokenizer()`); `start_id` the
    task's (the text is read after it). Given the `task` (its start, end
    and never-generated ids), the streaming endpoints are added too
    (`training.runs.streaming`: `serve_initial_state`, `serve_step` and, for
    a model that generates text, `serve_generate`).
    """
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(tokenizer)
    for name, (function, signature) in model.serving_endpoints(
        tokenizer, start_id
    ).items():
        archive.add_endpoint(name, function, input_signature=signature)
    if task is not None:
        streaming.add_streaming_endpoints(archive, model, tokenizer, task)
    archive.write_out(str(path), verbose=False)
    return Path(path)


LITERT_FILE = "serve_step.tflite"  # `--litert`: training.runs.litert
ONNX_FILE = "serve_step.onnx"  # `--onnx`: training.runs.onnx_step
MARKER = "zoo_export.json"  # what marks a folder as an export of `export_run`


def export_run(run_dir, out_dir, litert=False, onnx=False):
    """Exports the best model of a run directory; returns the SavedModel path.

    The SavedModel is written into a folder of this process's own beside
    `out_dir` (`run_dirs.scratch_beside`: `OUT.partial-PID-RANDOM`; a folder
    named `OUT.partial` is never touched) and moved into place, so `out_dir`
    holds a whole export or what it held before; exports into one `out_dir`
    at once each succeed in turn (`run_dirs.replace_folder`). An existing
    `out_dir` is replaced only when it is empty or an earlier export of
    this function (it holds `MARKER`); anything else is a `ValueError`.
    On a backend other than TensorFlow the export runs in a TensorFlow
    subprocess (`export_in_tensorflow`); `summary(path)` says which.
    """
    if not backends.is_tensorflow():
        return export_in_tensorflow(run_dir, out_dir, litert, onnx)
    if onnx:
        check_available()
    out_dir = Path(out_dir)
    run_files.check_target(out_dir, "export target")
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(
            f"Export target {str(out_dir)!r} is a file; expected a folder."
        )
    if out_dir.is_dir() and any(out_dir.iterdir()) and not _is_export(out_dir):
        raise ValueError(
            f"Export target {str(out_dir)!r} is a non-empty folder that is not an "
            "earlier export; expected a new or empty folder."
        )
    if run_files.in_run_directory(out_dir):  # the export of training.train
        run_files.claim(out_dir, "python -m training.export")
    run = runs.load_run(run_dir, precision="float32")  # serves float32 anywhere
    source = runs.check_run(run_dir).resolve()  # a preset's own folder
    partial = run_dirs.scratch_beside(out_dir, "export target")
    try:
        with interrupts.remembered():  # a Ctrl-C Python drops still stops it
            export_model(
                run.model,
                run.tokenizer,
                partial,
                start_id=run.task.start_id,
                task=run.task,
            )
            cell = f"cell {run.recipe.model.cell!r}"
            if litert:  # inside the folder before it moves: no partial file
                write_step(partial, partial / LITERT_FILE, cell)
            if onnx:
                write_onnx(partial, partial / ONNX_FILE, cell)
            marker = {"run_dir": str(source), "backend": "tensorflow"}
            runs.write_json(partial / MARKER, marker)
            interrupts.raise_if_noted()
        return run_dirs.replace_folder(partial, out_dir, _is_export, "export target")
    finally:
        shutil.rmtree(partial, ignore_errors=True)  # left when not moved in


def _is_export(folder):
    return (Path(folder) / MARKER).is_file()


def export_in_tensorflow(run_dir, out_dir, litert=False, onnx=False):
    """`export_run` in a `python -m training.export` subprocess on TensorFlow.

    For a process whose Keras runs on another backend (the backend is fixed
    per process). The child loads the run's `best.keras` into the
    TensorFlow-backend model and writes the SavedModel as `export_run` does
    there; its marker then names the backend this process runs on
    (`exported_from`). A refusal or failure of the child is a one-line
    `ValueError` with its last line.
    """
    command = [sys.executable, "-m", "training.export", str(run_dir), str(out_dir)]
    command += ["--litert"] * litert + ["--onnx"] * onnx
    environment = {**os.environ, "KERAS_BACKEND": "tensorflow"}
    done = subprocess.run(
        command, env=environment, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
        last = lines[-1].removeprefix("python -m training.export: error: ")
        raise ValueError(
            f"The TensorFlow-backend export subprocess failed: {last}"
        ) from None
    out_dir = Path(out_dir)
    marker = runs.read_json(out_dir / MARKER)
    marker["exported_from"] = backends.name()
    runs.write_json(out_dir / MARKER, marker)
    return out_dir


def summary(path):
    """The line that names an export and, unless plain, how it was written."""
    marker = runs.read_json(Path(path) / MARKER)
    source = marker.get("exported_from")
    if source is None:
        return f"SavedModel: {path}"
    return (
        f"SavedModel: {path} (written by the TensorFlow backend in a subprocess, "
        f"from the run's .keras weights; Keras runs on {source} here)"
    )
