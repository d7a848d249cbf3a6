"""What a zoo model serves in a SavedModel: its endpoints, defined by its class.

Every zoo model class (`zoo.ZooModel`) gives `serving_endpoints(tokenizer,
start_id)`: `{name: (function, input_signature)}`, which
`training.runs.saved_model.export_model` writes with
`keras.export.ExportArchive`. Every class has

- `serve(token_ids)`: int32 `(batch, time)` -> the model's output, ids
  checked to be in the vocabulary (`serve_ids`);
- `serve_text(texts)` (and `serve_text_unk` where the vocabulary has an
  unknown token): strings tokenized in the graph (`TextScorer`), then read
  by the class's own `text_outputs(ids, start_id)`: a language model's
  next-token log-probabilities and log-likelihood (`language_scores`), a
  recognizer's with its acceptance, the Dyck-RNN's closing-bracket
  log-probabilities, a tagger's or a classifier's labels (`labels`).

The hook: a class adds endpoints by overriding `serving_endpoints`, calling
`super().serving_endpoints(...)` and adding its own entries (the streaming
`serve_step`, `serve_initial_state` and `serve_generate` of a language
model go there), each a function of tensors and its `tf.TensorSpec`s. A
head needs no `kind` or `head` string: what it serves is its class's.

TensorFlow only (a SavedModel is TensorFlow's); imported when a model is
exported.
"""

import tensorflow as tf

UNK_HINT = "serve_text_unk reads them as <unk>"  # what an unknown token's error adds


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


class TextScorer(tf.Module):
    """Tokenizes a batch of strings and has the model's class read them.

    `tokenizer` (a `zoo.tokenizer.Tokenizer`) writes each string in its
    vocabulary's conventions and reads it as lines, each ending with the
    end-of-line token where the vocabulary has one; a token it lacks fails
    the call, or with `on_unknown="unk"` is read as `<unk>`. The ragged ids
    go to `model.text_outputs(ids, start_id)`.
    """

    def __init__(self, model, tokenizer, start_id=None, on_unknown="error"):
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.start_id = start_id
        self.on_unknown = on_unknown

    def __call__(self, texts):
        # One empty string more, dropped at the end: the ragged results of an
        # empty batch have no rows to stack.
        texts = tf.concat([texts, [""]], axis=0)
        ids = self.tokenizer.id_tensor(
            texts, self.on_unknown, end_lines=True, hint=UNK_HINT
        )  # ragged [batch, tokens]
        results = self.model.text_outputs(ids, self.start_id)
        return {name: value[:-1] for name, value in results.items()}


def endpoints(model, tokenizer, start_id=None):
    """`serve`, `serve_text` and `serve_text_unk`: every class's endpoints."""
    found = {
        "serve": (
            lambda token_ids: serve_ids(model, token_ids, tokenizer.vocabulary_size()),
            [tf.TensorSpec([None, None], tf.int32, name="token_ids")],
        )
    }
    kinds = {"serve_text": "error"}
    if tokenizer.unk_token is not None:
        kinds["serve_text_unk"] = "unk"
    for name, on_unknown in kinds.items():
        found[name] = (
            TextScorer(model, tokenizer, start_id, on_unknown),
            [tf.TensorSpec([None], tf.string, name="texts")],
        )
    return found


def read_after_start(ids, start_id):
    """`(inputs, targets)`: ragged ids read after `start_id` (when there is one)."""
    if start_id is None:
        return ids, ids[:, 1:]  # position t predicts token t + 1
    start = tf.fill([ids.nrows(), 1], tf.constant(start_id, ids.dtype))  # [batch, 1]
    inputs = tf.concat([tf.RaggedTensor.from_tensor(start), ids], axis=1)
    return inputs, ids  # position t predicts token t


def language_scores(logits, padded, targets):
    """`log_probabilities` `(batch, time, vocab)` and `log_likelihood` `(batch,)`.

    `logits` are the model's on `padded` ids; `targets` the ragged ids each
    position predicts.
    """
    log_probabilities = tf.nn.log_softmax(logits)  # [batch, time, vocab]
    time = tf.shape(padded)[1]
    target_ids = targets.to_tensor(0, shape=tf.stack([tf.shape(padded)[0], time]))
    picked = tf.gather(log_probabilities, target_ids, batch_dims=2)
    mask = tf.sequence_mask(targets.row_lengths(), time)  # [batch, time]
    return {
        "log_probabilities": log_probabilities,
        "log_likelihood": tf.reduce_sum(tf.where(mask, picked, 0.0), axis=1),
    }


def labels(model, ids, per_token):
    """A tagger's (`per_token`) or a classifier's labels and probabilities."""
    lengths = ids.row_lengths()
    padded = ids.to_tensor(0)  # [batch, time]
    time = tf.shape(padded)[1]
    steps = tf.pad(padded, [[0, 0], [0, tf.maximum(1 - time, 0)]])  # >= 1
    probabilities = tf.nn.softmax(model(steps, training=False))
    if not per_token:
        label = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        return {"lengths": lengths, "label": label, "probabilities": probabilities}
    probabilities = probabilities[:, :time]  # [batch, time, classes]
    tags = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    mask = tf.sequence_mask(lengths, time)  # [batch, time]
    return {
        "lengths": lengths,
        "labels": tf.where(mask, tags, -1),
        "probabilities": probabilities,
    }
