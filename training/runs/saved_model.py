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

The model is rebuilt in float32 whatever the run's `train.precision` (its
weights are float32 in every policy), so the export computes and serves
float32 on any device.

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
import tensorflow as tf

from training.core import backends
from training.runs import run_dirs, runs, streaming
from training.runs.litert import write_step

UNK_HINT = "serve_text_unk reads them as <unk>"  # what an unknown token's error adds


class TextScorer(tf.Module):
    """Tokenizes a batch of strings and runs the model on them.

    `tokenizer` (a `zoo.tokenizer.Tokenizer`) writes each string in its
    vocabulary's conventions and reads it as lines, each ending with the
    end-of-line token where the vocabulary has one; a token it lacks fails
    the call, or with `on_unknown="unk"` is read as `<unk>`. The ids of each
    string are read after `start_id` when there is one. What comes back
    depends on the model's `head`: a language model (or the next-symbol head
    of a recognizer) gives `log_probabilities` and `log_likelihood`; a
    recognizer adds `accept`, the probability that each whole string is in
    the language; the Dyck-RNN gives `closing_log_probabilities` over the k
    closing brackets; a tagger and a classifier give their labels and
    probabilities (`_labels`).
    """

    def __init__(
        self, model, tokenizer, start_id=None, head="language_model", on_unknown="error"
    ):
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.start_id = start_id
        self.head = head
        self.on_unknown = on_unknown

    def __call__(self, texts):
        # One empty string more, dropped at the end: the ragged results of an
        # empty batch have no rows to stack.
        results = self._score(tf.concat([texts, [""]], axis=0))
        return {name: value[:-1] for name, value in results.items()}

    def _score(self, texts):
        ids = self.tokenizer.id_tensor(
            texts, self.on_unknown, end_lines=True, hint=UNK_HINT
        )  # ragged [batch, tokens]
        lengths = ids.row_lengths()
        if self.head in ("tagger", "classifier"):
            return self._labels(ids)
        if self.start_id is not None:
            start_id = tf.constant(self.start_id, tf.int32)
            start = tf.fill([tf.shape(texts)[0], 1], start_id)  # [batch, 1]
            inputs = tf.concat([tf.RaggedTensor.from_tensor(start), ids], axis=1)
            targets = ids  # position t predicts token t
        else:
            inputs, targets = ids, ids[:, 1:]  # position t predicts token t + 1
        padded = inputs.to_tensor(0)  # [batch, time]
        outputs = self.model(padded, training=False)
        results = {"lengths": lengths}
        if self.head == "closing_bracket":
            results["closing_log_probabilities"] = tf.math.log(outputs)
            return results
        if self.head == "recognizer":
            last = inputs.row_lengths() - 1  # the step that read the last token
            results["accept"] = tf.gather(outputs["accept"][..., 0], last, batch_dims=1)
            outputs = outputs["next_symbol"]
        log_probabilities = tf.nn.log_softmax(outputs)  # [batch, time, vocab]
        time = tf.shape(padded)[1]
        target_ids = targets.to_tensor(0, shape=tf.stack([tf.shape(padded)[0], time]))
        picked = tf.gather(log_probabilities, target_ids, batch_dims=2)
        mask = tf.sequence_mask(targets.row_lengths(), time)  # [batch, time]
        results["log_probabilities"] = log_probabilities
        results["log_likelihood"] = tf.reduce_sum(tf.where(mask, picked, 0.0), axis=1)
        return results

    def _labels(self, ids):
        """A tagger's or a classifier's labels and probabilities of ragged `ids`."""
        lengths = ids.row_lengths()
        padded = ids.to_tensor(0)  # [batch, time]
        time = tf.shape(padded)[1]
        steps = tf.pad(padded, [[0, 0], [0, tf.maximum(1 - time, 0)]])  # >= 1
        probabilities = tf.nn.softmax(self.model(steps, training=False))
        if self.head == "classifier":
            label = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
            return {"lengths": lengths, "label": label, "probabilities": probabilities}
        probabilities = probabilities[:, :time]  # [batch, time, classes]
        labels = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        mask = tf.sequence_mask(lengths, time)  # [batch, time]
        return {
            "lengths": lengths,
            "labels": tf.where(mask, labels, -1),
            "probabilities": probabilities,
        }


def serve_ids(model, token_ids, vocab_size):
    """`model`'s output on `(batch, time)` ids, checked to be in the vocabulary.

    The checks run in the graph, so they hold wherever the SavedModel is
    served. A recurrent model reads left to right, so a `(batch, 0)` input is
    read as one padding step whose outputs are then cut to 0 steps.
    """
    message = f"serve: token ids must be in [0, {vocab_size}), the run's vocabulary"
    in_vocabulary = [
        tf.debugging.assert_non_negative(token_ids, message=message),
        tf.debugging.assert_less(token_ids, vocab_size, message=message),
    ]
    with tf.control_dependencies(in_vocabulary):
        time = tf.shape(token_ids)[1]
        steps = tf.pad(token_ids, [[0, 0], [0, tf.maximum(1 - time, 0)]])  # >= 1
    outputs = model(steps, training=False)
    # A classifier's output has no time axis to cut.
    return tf.nest.map_structure(
        lambda output: output[:, :time] if output.shape.rank == 3 else output,
        outputs,
    )


def export_model(
    model, tokenizer, path, start_id=None, head="language_model", task=None
):
    """Writes `model` with the `serve` and `serve_text` endpoints to `path`.

    `tokenizer` is a `zoo.tokenizer.Tokenizer` (a task's `tokenizer()`);
    `start_id` and `head` are the task's (`TextScorer`). Where the
    vocabulary has an unknown token, `serve_text_unk` reads the tokens it
    lacks as that token. Given the `task`, the streaming endpoints
    (`training.runs.streaming`) are added too.
    """
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(tokenizer)
    archive.add_endpoint(
        "serve",
        lambda token_ids: serve_ids(model, token_ids, tokenizer.vocabulary_size()),
        input_signature=[tf.TensorSpec([None, None], tf.int32, name="token_ids")],
    )
    endpoints = {"serve_text": "error"}
    if tokenizer.unk_token is not None:
        endpoints["serve_text_unk"] = "unk"
    for name, on_unknown in endpoints.items():
        archive.add_endpoint(
            name,
            TextScorer(model, tokenizer, start_id, head, on_unknown),
            input_signature=[tf.TensorSpec([None], tf.string, name="texts")],
        )
    if task is not None:
        streaming.add_streaming_endpoints(archive, model, tokenizer, task, head)
    archive.write_out(str(path), verbose=False)
    return Path(path)


LITERT_FILE = "serve_step.tflite"  # `--litert`: training.runs.litert
MARKER = "zoo_export.json"  # what marks a folder as an export of `export_run`


def export_run(run_dir, out_dir, litert=False):
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
        return export_in_tensorflow(run_dir, out_dir)
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(
            f"Export target {str(out_dir)!r} is a file; expected a folder."
        )
    if out_dir.is_dir() and any(out_dir.iterdir()) and not _is_export(out_dir):
        raise ValueError(
            f"Export target {str(out_dir)!r} is a non-empty folder that is not an "
            "earlier export; expected a new or empty folder."
        )
    run = runs.load_run(run_dir, precision="float32")  # serves float32 anywhere
    source = runs.check_run(run_dir).resolve()  # a preset's own folder
    partial = run_dirs.scratch_beside(out_dir, "export target")
    try:
        export_model(
            run.model,
            run.tokenizer,
            partial,
            start_id=run.task.start_id,
            head=run.task.head,
            task=run.task,
        )
        if litert:  # inside the folder before it moves: no partial file
            cell = f"cell {run.recipe.model.cell!r}"
            write_step(partial, partial / LITERT_FILE, cell)
        marker = {"run_dir": str(source), "backend": "tensorflow"}
        runs.write_json(partial / MARKER, marker)
        return run_dirs.replace_folder(partial, out_dir, _is_export, "export target")
    finally:
        shutil.rmtree(partial, ignore_errors=True)  # left when not moved in


def _is_export(folder):
    return (Path(folder) / MARKER).is_file()


def export_in_tensorflow(run_dir, out_dir):
    """`export_run` in a `python -m training.export` subprocess on TensorFlow.

    For a process whose Keras runs on another backend (the backend is fixed
    per process). The child loads the run's `best.keras` into the
    TensorFlow-backend model and writes the SavedModel as `export_run` does
    there; its marker then names the backend this process runs on
    (`exported_from`). A refusal or failure of the child is a one-line
    `ValueError` with its last line.
    """
    command = [sys.executable, "-m", "training.export", str(run_dir), str(out_dir)]
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
