"""A SavedModel's streaming endpoints: the state in, one token, the state out.

`add_streaming_endpoints` gives an export (`training.runs.saved_model`)
these endpoints, beside `serve` and `serve_text`:

- `serve_initial_state(batch_size)`: int32 scalar -> the zero state, a dict
  of float32 tensors `state_L_I` `(batch_size, size)`: layer `L` (0 is the
  bottom) and its cell's state `I`, in the cell's order (an LSTM's `h` then
  `c`; `zoo.sampler.Stepper`).
- `serve_step(token_ids, state_0_0, ...)`: int32 `(batch,)` ids and the
  state -> the step's outputs and the new state (same names): a language
  model's `log_probabilities` `(batch, vocab)` (of the next token); a
  recognizer's `log_probabilities` of the next symbol and `accept`
  `(batch,)`, the probability that the prefix read so far is in the
  language; a tagger's `probabilities` `(batch, classes)` and `labels`
  `(batch,)` of the token just read; the Dyck-RNN's
  `closing_log_probabilities` `(batch, k)`. Feeding a text's ids one at a
  time gives `serve_text`'s outputs step by step.
- `serve_generate(texts, max_length, temperature, top_k, seed)`, for a
  language model: each prompt text (in the vocabulary's conventions, read
  after the task's start token) followed by up to `max_length` sampled
  tokens as text, tokenized, sampled (`zoo.sampler.Sampler.program`, the
  same loop as `zoo.sampler.generate`, here in the graph) and written back
  inside the graph; `texts` `(batch,)` and `lengths` `(batch,)` (tokens
  sampled). `top_k` >= the vocabulary size draws from every id.

Every bad input fails the call with an `InvalidArgumentError` of one line
(an id outside the vocabulary, a state whose batch differs from the ids',
an empty batch, `max_length` outside [1, `zoo.sampler.MAX_LENGTH`],
`top_k` < 1, a temperature that is not a positive number, an unknown
token). A bidirectional tagger or a classifier has no step to stream and
gets none of these endpoints.
"""

import inspect

import tensorflow as tf

from zoo import sampler as zoo_sampler
from zoo import text_conventions


def state_names(stepper):
    """`state_L_I` for each state tensor of `stepper`, in its order."""
    names = []
    for layer_index, layer in enumerate(stepper.parts.layers):
        count = len(keras_states(layer))
        names += [f"state_{layer_index}_{i}" for i in range(count)]
    return names


def keras_states(layer):
    states = layer.get_initial_state(1)
    return states if isinstance(states, (list, tuple)) else [states]


def _check_batch(batch_size, what):
    return tf.debugging.assert_positive(
        batch_size,
        message=f"{what}: the batch is empty; expected at least one row",
    )


def add_streaming_endpoints(archive, model, tokenizer, task):
    """Adds the module docstring's endpoints to a `keras.export.ExportArchive`.

    `task` gives `start_id`, `end_id` and `never_generated`; the model's
    class names a step's outputs (`step_outputs`) and says whether it
    samples text (`generates`). Returns the endpoint names added (none for
    a model with no step to stream).
    """
    try:
        stepper = (
            zoo_sampler.Sampler(model)
            if model.generates
            else zoo_sampler.Stepper(model)
        )
    except ValueError:
        return []
    names = state_names(stepper)
    sizes = stepper.state_sizes()
    vocab_size = tokenizer.vocabulary_size()

    def initial_state(batch_size):
        with tf.control_dependencies([_check_batch(batch_size, "serve_initial_state")]):
            state = stepper.initial_state(tf.identity(batch_size))
        return dict(zip(names, state, strict=True))

    def step(*args, **kwargs):
        bound = signature.bind(*args, **kwargs).arguments
        token_ids, state = bound["token_ids"], [bound[name] for name in names]
        batch = tf.shape(token_ids)[0]
        message = f"serve_step: token ids must be in [0, {vocab_size}), the vocabulary"
        checks = [
            _check_batch(batch, "serve_step"),
            tf.debugging.assert_non_negative(token_ids, message=message),
            tf.debugging.assert_less(token_ids, vocab_size, message=message),
        ]
        for name, tensor in zip(names, state, strict=True):
            checks.append(
                tf.debugging.assert_equal(
                    tf.shape(tensor)[0],
                    batch,
                    message=f"serve_step: {name} has a batch other than that of "
                    "token_ids; expected one state row per token",
                )
            )
        with tf.control_dependencies(checks):
            token_ids = tf.identity(token_ids)
        outputs, state = stepper.step(token_ids, list(state))
        named = model.step_outputs(outputs)
        return {**named, **dict(zip(names, state, strict=True))}

    # The state tensors are arguments by name (`state_0_0=...`) in Python too.
    parameter = inspect.Parameter.POSITIONAL_OR_KEYWORD
    signature = inspect.Signature(
        [inspect.Parameter(name, parameter) for name in ["token_ids", *names]]
    )
    step.__signature__ = signature
    archive.add_endpoint(
        "serve_initial_state",
        initial_state,
        input_signature=[tf.TensorSpec([], tf.int32, name="batch_size")],
    )
    archive.add_endpoint(
        "serve_step",
        step,
        input_signature=[tf.TensorSpec([None], tf.int32, name="token_ids")]
        + [
            tf.TensorSpec([None, size], tf.float32, name=name)
            for name, size in zip(names, sizes, strict=True)
        ],
    )
    added = ["serve_initial_state", "serve_step"]
    if model.generates:
        generator = TextGenerator(stepper, tokenizer, task)
        archive.add_endpoint(
            "serve_generate",
            generator,
            input_signature=[
                tf.TensorSpec([None], tf.string, name="texts"),
                tf.TensorSpec([], tf.int32, name="max_length"),
                tf.TensorSpec([], tf.float32, name="temperature"),
                tf.TensorSpec([], tf.int32, name="top_k"),
                tf.TensorSpec([], tf.int32, name="seed"),
            ],
        )
        added.append("serve_generate")
    return added


class TextGenerator(tf.Module):
    """`serve_generate`: texts in, texts out, the sampler's loop in between."""

    def __init__(self, sampler, tokenizer, task):
        super().__init__()
        self.sampler = sampler
        self.tokenizer = tokenizer
        self.start_id = task.start_id
        vocab_size = sampler.vocab_size
        self.stop = zoo_sampler.id_mask(
            [] if task.end_id is None else [task.end_id], vocab_size, "stop_ids"
        )
        self.never = zoo_sampler.id_mask(task.never_generated, vocab_size, "never")
        self.pieces, self.separated = _pieces(tokenizer)

    def __call__(self, texts, max_length, temperature, top_k, seed):
        name = "serve_generate"
        checks = [
            _check_batch(tf.shape(texts)[0], name),
            tf.debugging.assert_greater_equal(
                max_length, 1, message=f"{name}: max_length must be >= 1"
            ),
            tf.debugging.assert_less_equal(
                max_length,
                zoo_sampler.MAX_LENGTH,
                message=f"{name}: max_length must be <= {zoo_sampler.MAX_LENGTH}",
            ),
            tf.debugging.assert_greater_equal(
                top_k,
                1,
                message=f"{name}: top_k must be >= 1 (the vocabulary "
                "size or more: every id)",
            ),
            tf.debugging.Assert(
                tf.logical_and(temperature > 0, tf.math.is_finite(temperature)),
                [f"{name}: temperature must be a positive finite number"],
            ),
            tf.debugging.assert_non_negative(
                seed, message=f"{name}: seed must be >= 0"
            ),
        ]
        with tf.control_dependencies(checks):
            ids = self.tokenizer.id_tensor(texts)  # ragged [batch, ids]
        if self.start_id is not None:
            start = tf.fill(
                [tf.shape(texts)[0], 1], tf.constant(self.start_id, tf.int32)
            )
            ids = tf.concat([tf.RaggedTensor.from_tensor(start), ids], axis=1)
        lengths = tf.cast(ids.row_lengths(), tf.int32)
        empty = tf.debugging.assert_positive(
            lengths,
            message=f"{name}: a prompt is empty and the task has no start token",
        )
        with tf.control_dependencies([empty]):
            prompts = ids.to_tensor(0)
        options = {
            "temperature": temperature,
            "top_k": tf.minimum(top_k, self.sampler.vocab_size),
            "greedy": tf.constant(False),
            "seed": seed,
            "never": tf.constant(self.never),
            "stop": tf.constant(self.stop),
        }
        sampled, counts = self.sampler.program(prompts, lengths, max_length, options)
        last = tf.gather(prompts, lengths - 1, batch_dims=1)  # [batch]
        return {
            "texts": texts + self._text(sampled, counts, last, lengths),
            "lengths": counts,
        }

    def _text(self, sampled, counts, last, lengths):
        """The text of `sampled` ids `(batch, n)`, `counts` of them per row."""
        pieces = tf.gather(tf.constant(self.pieces), sampled)  # [batch, n]
        if self.separated:
            # A word starts a line after the end-of-line token or with no prompt.
            before = tf.concat([last[:, None], sampled[:, :-1]], axis=1)
            starts = tf.equal(
                before, -1 if self.tokenizer.eos_id is None else self.tokenizer.eos_id
            )
            prompt_empty = tf.equal(lengths, 0 if self.start_id is None else 1)
            first = tf.one_hot(0, tf.shape(sampled)[1], on_value=True, off_value=False)
            starts |= prompt_empty[:, None] & first[None]
            pieces = tf.where(
                starts, tf.strings.regex_replace(pieces, "^ ", ""), pieces
            )
        inside = tf.sequence_mask(counts, tf.shape(sampled)[1])
        return tf.strings.reduce_join(tf.where(inside, pieces, ""), axis=1)


def _pieces(tokenizer):
    """Each id's text after a token (`Tokenizer.pieces`), and whether words
    are separated by spaces (then a piece at a line's start loses its own)."""
    if tokenizer.level == "byte":
        return [bytes([i]) for i in range(256)], False
    space = text_conventions.SPACE_TOKENS.get(tokenizer.conventions)
    separated = tokenizer.level == "word" and space is None
    pieces = []
    for token_id, token in enumerate(tokenizer.tokens):
        if token_id == tokenizer.eos_id:
            pieces.append("\n")
        elif token == space:
            pieces.append(" ")
        else:
            pieces.append((" " if separated else "") + token)
    return [piece.encode("utf-8") for piece in pieces], separated
