"""A compiled sampler for every zoo language model: the whole loop in one program.

`generate(model, prompts, max_length, ...)` samples up to `max_length`
tokens after each prompt of a batch (prompts of different lengths allowed)
from a language model a zoo builder made (`zoo.language_model`, built or
loaded). The whole loop runs as one compiled program: each step embeds one
token, steps every recurrent cell once (`cell(inputs, states)`, the state
carried), decodes the top output to logits and draws the next token
(greedy, or at a temperature among the `top_k` likeliest), until every row
has met a stop id or `max_length` tokens. On TensorFlow it is an XLA while
loop (`tf.function(jit_compile=True)`), on JAX `jax.lax.while_loop` under
`jax.jit` (both through `keras.ops.while_loop`). The prompt is read by the
same loop, one token a step, each row on its own: a row whose prompt is
shorter starts sampling sooner, so a ragged batch needs no padding of its
prompts' meaning.

Draws come from a stateless generator keyed by `seed` and the step (Gumbel
noise: the arg-max of `logits / temperature + g`, `g = -log(-log(u))`, is a
draw from the softmax), so a fixed seed gives the same tokens on every call
on one backend; TensorFlow's and JAX's generators differ, so their draws
do too (their greedy tokens do not). The draws are not those of the Python
loop of `training.runs.generation` before issue 59.

`Sampler(model)` keeps the compiled programs of one model (a program per
prompt shape and `max_length`, compiled on first use); `generate` keeps a
`Sampler` per model. `Sampler.program` is the loop uncompiled, for a graph
that compiles it its own way (a SavedModel's `serve_generate`), and
`Sampler.step` one step, for streaming endpoints.

The model's parts come from `language_model_parts`, the one place that
finds them (by scanning `zoo.model_parts` today; by attribute once models
are classes).
"""

import weakref
from typing import NamedTuple

import keras
import numpy as np
from keras import ops

from zoo.checks import check_number
from zoo.model_parts import model_parts

# The most tokens one call samples per row: only a mistake asks for more.
MAX_LENGTH = 1_000_000


class LanguageModelParts(NamedTuple):
    """What a language model is made of, as the sampler steps it.

    - `embed`: token ids `(batch, time)` -> the bottom recurrent layer's
      inputs `(batch, time, features)` (the embedding, or the ids as
      features for a cell that reads them);
    - `layers`: the recurrent layers, bottom first (each has a `cell`);
    - `decode`: the top layer's outputs `(batch, time, units)` -> logits
      `(batch, time, vocab_size)` (the decoder, tied or not);
    - `vocab_size`: the number of token ids.
    """

    embed: object
    layers: tuple
    decode: object
    vocab_size: int


def language_model_parts(model):
    """The `LanguageModelParts` of a language model from `zoo.language_model`.

    A one-line `ValueError` for a model that is not a language model
    (several heads, or an output that is not per-step logits).
    """
    parts = model_parts(model)
    if len(parts.heads) != 1 or len(model.outputs[0].shape) != 3:
        raise ValueError(
            f"Expected a language model (token ids -> next-token logits); model "
            f"{model.name!r} has outputs {', '.join(parts.heads)}."
        )
    return step_parts(model)


def step_parts(model):
    """The parts of any one-way zoo model with an output per step.

    Found by scanning the functional graph (`zoo.model_parts`): `embed` and
    `decode` are the sub-graphs before the bottom recurrent layer and after
    the top one (`decode` gives the model's outputs, a dict for a
    recognizer); `vocab_size` is the first output's width. A one-line
    `ValueError` for a bidirectional layer or a layer that is not a cell's.
    The one place the sampler and the streaming endpoints find parts: once
    models are classes, the attributes.
    """
    parts = model_parts(model)
    for layer in parts.recurrent:
        if not hasattr(layer, "cell") or getattr(layer, "go_backwards", False):
            raise ValueError(
                f"Expected one-way recurrent layers with a cell; layer {layer.name!r} "
                f"of model {model.name!r} is a {type(layer).__name__}, which "
                "cannot be stepped one token at a time."
            )
    bottom, top = parts.recurrent[0], parts.recurrent[-1]
    if len(top.output.shape) != 3:
        raise ValueError(
            f"Expected an output per step; model {model.name!r} reads the last "
            "state only (a classifier), so it has no step to stream."
        )
    embed = keras.Model(model.inputs, bottom.input, name="embed")
    decode = keras.Model(top.output, model.output, name="decode")
    width = keras.tree.flatten(model.outputs)[0].shape[-1]
    return LanguageModelParts(embed, parts.recurrent, decode, width)


class Generated(NamedTuple):
    """What `generate` returns: `ids` int32 `(batch, max_length)`, 0 past each
    row's `lengths` `(batch,)` (a stop id, when met, is the row's last)."""

    ids: np.ndarray
    lengths: np.ndarray


def check_options(max_length, temperature, top_k, seed):
    """One-line `ValueError`s for bad sampling options (before any work)."""
    if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)):
        raise ValueError(f"`max_length` must be an integer; received {max_length!r}.")
    if not 1 <= max_length <= MAX_LENGTH:
        raise ValueError(
            f"`max_length` must be in [1, {MAX_LENGTH:,}] tokens; received "
            f"{max_length:,}."
        )
    check_number("temperature", temperature, low=0, low_open=True)
    if top_k is not None and (isinstance(top_k, bool) or not int(top_k) == top_k):
        raise ValueError(f"`top_k` must be an integer or None; received {top_k!r}.")
    if top_k is not None and top_k < 1:
        raise ValueError(f"`top_k` must be >= 1; received {top_k!r} (None: all ids).")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"`seed` must be an integer >= 0; received {seed!r}.")


def pad_prompts(prompts, vocab_size):
    """Ragged `prompts` (a list of id lists, or a 2-D array) -> `(ids, lengths)`.

    `ids` int32 `(batch, longest)` padded with 0; one-line `ValueError`s for
    an empty batch, an empty prompt or an id outside the vocabulary.
    """
    rows = [list(np.asarray(row).reshape(-1)) for row in prompts]
    if not rows:
        raise ValueError("`prompts` is an empty batch; expected at least one prompt.")
    lengths = np.array([len(row) for row in rows], np.int32)
    if lengths.min() == 0:
        raise ValueError(
            f"Prompt {int(np.argmin(lengths))} is empty; expected at least one "
            "token per prompt (a start token where the task has one)."
        )
    ids = np.zeros((len(rows), lengths.max()), np.int32)
    for index, row in enumerate(rows):
        ids[index, : len(row)] = row
    if ids.min() < 0 or ids.max() >= vocab_size:
        raise ValueError(
            f"Prompt ids must be in [0, {vocab_size}), the model's vocabulary; "
            f"received ids from {ids.min()} to {ids.max()}."
        )
    return ids, lengths


def id_mask(ids, vocab_size, name):
    """A boolean `(vocab_size,)` NumPy mask of `ids`, checked to be in range."""
    mask = np.zeros(vocab_size, bool)
    for token_id in ids:
        if isinstance(token_id, bool) or not 0 <= int(token_id) < vocab_size:
            raise ValueError(
                f"`{name}` must hold ids in [0, {vocab_size}); received {token_id!r}."
            )
        mask[int(token_id)] = True
    return mask


def uniform(shape, seed, step):
    """Stateless uniform draws in (0, 1) keyed by the ints `seed` and `step`."""
    if keras.backend.backend() == "jax":
        import jax

        key = jax.random.fold_in(jax.random.PRNGKey(seed), step)
        return jax.random.uniform(key, shape, minval=1e-20, maxval=1.0)
    import tensorflow as tf

    key = tf.stack([tf.cast(seed, tf.int32), tf.cast(step, tf.int32)])
    return tf.random.stateless_uniform(shape, key, minval=1e-20, maxval=1.0)


def choose(logits, step, options):
    """The next ids `(batch,)` from `logits` `(batch, vocab)`, as `options` say.

    `options` holds tensors: `temperature`, `top_k` (the vocabulary size for
    all), `greedy` (bool), `seed` and `never` (a `(vocab,)` mask of ids never
    drawn).
    """
    logits = ops.cast(logits, "float32")
    logits = ops.where(options["never"][None], -np.inf, logits)
    best = ops.argmax(logits, axis=-1)
    scaled = logits / options["temperature"]
    top_k, vocab = options["top_k"], ops.shape(logits)[-1]
    # The sort is skipped where all ids are kept (the default): it cost 22%
    # of a 256-unit LSTM's step at batch 64 (benchmarks/log.md).
    scaled = ops.cond(top_k < vocab, lambda: likeliest(scaled, top_k), lambda: scaled)
    noise = -ops.log(-ops.log(uniform(ops.shape(scaled), options["seed"], step)))
    drawn = ops.argmax(scaled + noise, axis=-1)
    return ops.cast(ops.where(options["greedy"], best, drawn), "int32")


def likeliest(scaled, top_k):
    """`scaled` `(batch, vocab)` with all but each row's `top_k` largest set
    to -inf (ties at the k-th value are kept)."""
    ascending = ops.sort(scaled, axis=-1)
    kth = ops.take(ascending, ops.shape(scaled)[-1] - top_k, axis=1)  # [batch]
    return ops.where(scaled >= kth[:, None], scaled, -np.inf)


class Stepper:
    """One step of a one-way zoo model: a token in, its outputs and state out.

    `step(token_ids, state)` embeds ids `(batch,)`, steps every recurrent
    cell once and decodes: it returns the model's outputs for that step
    (without the time axis: logits `(batch, vocab)`, a recognizer's dict)
    and the new state, a flat list of `(batch, size)` tensors, bottom layer
    first and each layer's in its cell's order (`state_sizes`).
    """

    def __init__(self, model, parts=None):
        self.model = model
        self.parts = parts or step_parts(model)

    def initial_state(self, batch_size):
        """Every layer's zero state: a flat list of `(batch, size)` tensors."""
        return [
            s for layer in self.parts.layers for s in _layer_zeros(layer, batch_size)
        ]

    def state_sizes(self):
        """The width of each tensor of `initial_state`, in its order."""
        return [int(s.shape[-1]) for s in self.initial_state(1)]

    def step(self, token_ids, state):
        """One step: ids `(batch,)` and the flat state -> outputs, new state."""
        x = self.parts.embed(token_ids[:, None], training=False)[:, 0]
        new_state, at = [], 0
        for layer in self.parts.layers:
            count = len(_layer_zeros(layer, 1))
            states = state[at : at + count]
            at += count
            single = not keras.tree.is_nested(layer.cell.state_size)
            x, states = layer.cell(
                x, states[0] if single else list(states), training=False
            )
            new_state += list(states) if keras.tree.is_nested(states) else [states]
        outputs = self.parts.decode(x[:, None], training=False)
        outputs = keras.tree.map_structure(
            lambda y: ops.cast(y[:, 0], "float32"), outputs
        )
        return outputs, new_state


class Sampler(Stepper):
    """The compiled sampling programs of one language model (module docstring)."""

    def __init__(self, model):
        super().__init__(model, language_model_parts(model))
        self._compiled = None

    @property
    def vocab_size(self):
        return self.parts.vocab_size

    def options(
        self,
        temperature=1.0,
        top_k=None,
        greedy=False,
        seed=0,
        stop_ids=(),
        never_ids=(),
    ):
        """The `options` of `program` (NumPy values) for `generate`'s
        arguments of the same names."""
        return {
            "temperature": np.float32(temperature),
            "top_k": np.int32(min(top_k or self.vocab_size, self.vocab_size)),
            "greedy": np.bool_(greedy),
            "seed": np.int32(seed),
            "never": id_mask(never_ids, self.vocab_size, "never_ids"),
            "stop": id_mask(stop_ids, self.vocab_size, "stop_ids"),
        }

    def program(self, prompts, lengths, max_length, options):
        """The sampling loop on padded `prompts` `(batch, longest)` and their
        `lengths`: returns `(ids, lengths)` of the sampled tokens. `options`
        as `choose`'s, plus `stop` (a `(vocab,)` mask). Uncompiled."""
        prompts = ops.convert_to_tensor(prompts, "int32")
        lengths = ops.convert_to_tensor(lengths, "int32")
        batch, longest = ops.shape(prompts)[0], ops.shape(prompts)[1]
        total = longest - 1 + max_length  # the most steps a row can take
        first = lengths - 1  # the step that reads a row's last prompt token

        def cond(t, token, state, buffer, counts, done):
            return ops.logical_and(t < total, ops.logical_not(ops.all(done)))

        def body(t, token, state, buffer, counts, done):
            logits, state = self.step(token, state)
            drawn = choose(logits, t, options)  # [batch]
            sampling = ops.logical_and(t >= first, ops.logical_not(done))
            drawn = ops.where(sampling, drawn, 0)
            buffer = ops.slice_update(buffer, [t, 0], drawn[None])  # [total, batch]
            counts = counts + ops.cast(sampling, "int32")
            stopped = ops.logical_and(sampling, ops.take(options["stop"], drawn))
            done = ops.logical_or(done, stopped)
            done = ops.logical_or(done, counts >= max_length)
            following = ops.take(prompts, ops.minimum(t + 1, longest - 1), axis=1)
            token = ops.where(t + 1 < lengths, following, drawn)
            return t + 1, token, state, buffer, counts, done

        loop_vars = (
            ops.convert_to_tensor(0, "int32"),
            prompts[:, 0],
            self.initial_state(batch),
            ops.zeros((total, batch), "int32"),
            ops.zeros((batch,), "int32"),
            ops.zeros((batch,), "bool"),
        )
        _, _, _, buffer, counts, _ = ops.while_loop(cond, body, loop_vars)
        # Row b's i-th sampled token was drawn at step first[b] + i.
        at = first[:, None] + ops.arange(max_length, dtype="int32")[None]
        at = ops.minimum(at, total - 1)  # [batch, max_length]
        ids = ops.take_along_axis(ops.transpose(buffer), at, axis=1)
        inside = ops.arange(max_length, dtype="int32")[None] < counts[:, None]
        return ops.where(inside, ids, 0), counts

    def __call__(
        self,
        prompts,
        max_length,
        temperature=1.0,
        top_k=None,
        greedy=False,
        seed=0,
        stop_ids=(),
        never_ids=(),
    ):
        """Samples after each prompt: see `generate`."""
        check_options(max_length, temperature, top_k, seed)
        ids, lengths = pad_prompts(prompts, self.vocab_size)
        options = self.options(temperature, top_k, greedy, seed, stop_ids, never_ids)
        if self._compiled is None:
            self._compiled = self._make_program()
        out, counts = self._compiled(ids, lengths, int(max_length), options)
        return Generated(ops.convert_to_numpy(out), ops.convert_to_numpy(counts))

    def _make_program(self):
        if keras.backend.backend() == "jax":
            return _jax_program(self)
        if keras.backend.backend() != "tensorflow":
            raise ValueError(
                "The compiled sampler runs on the TensorFlow and JAX backends; "
                f"this process runs Keras on {keras.backend.backend()}."
            )
        import tensorflow as tf

        # No AutoGraph: the loop is keras.ops.while_loop already, and
        # converting the program cost 0.3 s of a command's start-up.
        compiled = tf.function(
            self.program, jit_compile=True, reduce_retracing=True, autograph=False
        )
        return lambda ids, lengths, max_length, options: compiled(
            ids, lengths, max_length, options
        )


def _layer_zeros(layer, batch_size):
    states = layer.get_initial_state(batch_size)
    return list(states) if keras.tree.is_nested(states) else [states]


def _jax_program(sampler):
    """`sampler.program` under `jax.jit`, with the model's variables as
    arguments (a `keras.StatelessScope`), not constants."""
    import jax

    variables = sampler.model.variables

    def pure(values, ids, lengths, max_length, options):
        with keras.StatelessScope(
            state_mapping=list(zip(variables, values, strict=True))
        ):
            return sampler.program(ids, lengths, max_length, options)

    jitted = jax.jit(pure, static_argnums=3)
    return lambda ids, lengths, max_length, options: jitted(
        [v.value for v in variables], ids, lengths, max_length, options
    )


_SAMPLERS = weakref.WeakKeyDictionary()


def generate(model, prompts, max_length, **options):
    """Samples up to `max_length` tokens after each prompt, in one compiled loop.

    Args (the options are keywords, each with its default):
        model: A language model from `zoo.language_model` (built or loaded).
        prompts: A batch of token-id prompts, each at least one id (a list
            of lists of different lengths, or a 2-D array).
        max_length: The most tokens to sample per prompt, in
            [1, `MAX_LENGTH`].
        temperature: Positive; the logits are divided by it. Default: 1.
        top_k: Draw among the `top_k` likeliest ids only (None: all).
        greedy: Take the likeliest id at every step (no draw). Default:
            `False`.
        seed: Integer >= 0 keying the draws: the same seed, the same tokens.
        stop_ids: Ids that end a row once sampled (kept as its last token).
        never_ids: Ids never sampled (a Dyck model's padding and START).

    Returns a `Generated` `(ids, lengths)`: the sampled ids, 0 past each
    row's length. Bad arguments are one-line `ValueError`s.

    Example:

    >>> model = zoo.language_model("lstm", vocab_size=50, units=64)
    >>> out = zoo.generate(model, [[1, 2, 3], [4]], max_length=5, seed=1)
    >>> out.ids.shape, out.lengths.tolist()
    ((2, 5), [5, 5])
    """
    sampler = _SAMPLERS.get(model)
    if sampler is None:
        sampler = _SAMPLERS[model] = Sampler(model)
    return sampler(prompts, max_length, **options)
