"""Model builders: a zoo cell inside a complete Keras model.

`language_model` maps token ids to next-token logits. `recognizer` is the
recognizer of formal languages trained with Mali et al.'s hybrid loss: Mali et
al. (2020, section 3) train it to predict at every step both the next symbol
(cross-entropy) and the string's label (`0.5 (y_hat_t - y)^2`);
`hybrid_recognition_loss` gives the matching `model.compile` arguments, so
`model.fit` trains on the hybrid loss with Keras's built-in losses (no custom
object is needed to load a saved recognizer). `trace_recognizer` returns the
stack actions of a recognizer built on a stack cell.

Each builder constructs its class (`LanguageModel`, `Recognizer`: a
`zoo.ZooModel` each, whose constructor arguments are its config), which puts
its heads on a `zoo.Backbone` (the embedding, the recurrent layers and the
dropout between them) and keeps its parts as attributes.
"""

import keras
from keras import ops

from zoo.backbone import Backbone, check_token_id_cell
from zoo.devices import gpu_visible
from zoo.walk import walk_layers
from zoo.zoo_model import ZooModel

# On a CPU, XLA pays up to these units, at every measured length
# (benchmarks/log.md, `python benchmarks/xla.py`); `CPU_XLA_LIMIT` bounds
# the steps that `training.core.compile_mode.choose_steps` groups.
CPU_XLA_MAX_UNITS = 512
CPU_XLA_LIMIT = 32 * 16_384


def default_jit_compile(units=None, batch=None, length=None):
    """Returns whether to compile a recurrent model with XLA here.

    - On a backend other than TensorFlow: `"auto"`, Keras's own choice (JAX
      compiles every step).
    - With a GPU visible: `True`.
    - On a CPU, given the shape of one step (`units`, `batch`, `length`):
      `True` when `units <= CPU_XLA_MAX_UNITS`, at any batch and length.
      With the zoo's TensorFlow loop (`zoo.tensorflow_loop`, which keeps the
      compiled loop linear in the length) XLA trained every measured shape
      at least as fast as the graph (CPU time per step, `model.fit`, batch
      32): the LSTM 1.5-4.2x at 8 units (lengths 16-2048), 1.9-3.1x at 32
      and 1.3-1.9x at 128 (both to 2048), 1.2-1.3x at 256 and 1.1x at 512
      (to 256), the DiffStk-RNN 2.2-7.6x (8-128 units, to 2048); at 1024
      units the two were level (1.04-1.08x), so wider cells stay in the
      graph (benchmarks/log.md, "The rule with the zoo's loop"). `batch`
      and `length` stay in the signature: the rule before issue 39 used them
      (Keras's own loop made XLA quadratic in the length).
    - On a CPU without a shape: `False`.

    Pass the result as `model.compile(..., jit_compile=...)`.
    """
    if keras.backend.backend() != "tensorflow":
        return "auto"
    if gpu_visible():
        return True
    if units is None or batch is None or length is None:
        return False
    return units <= CPU_XLA_MAX_UNITS


def reset_states(model):
    """Resets the state of every stateful recurrent layer in `model` to zeros.

    Keras 3 models have no `reset_states()`; this walks the model's layers,
    including those inside `Bidirectional` wrappers and nested models.
    """
    for layer in walk_layers(model):
        if getattr(layer, "stateful", False) and hasattr(layer, "reset_state"):
            layer.reset_state()


def language_model(
    cell,
    vocab_size,
    units,
    embedding_dim=None,
    num_layers=1,
    dropout=0.0,
    tie_embeddings=False,
    stateful=False,
    batch_size=None,
    output_dropout=None,
    **cell_options,
):
    """Builds a language model from token ids to next-token logits.

    The model maps int token ids `(batch, time)` to logits
    `(batch, time, vocab_size)`: an embedding, `num_layers` recurrent layers
    of the registered `cell` (each layer's hidden state is the next layer's
    input), and a linear decoder. Dropout is variational: one mask per
    sequence on the embedding, between layers and (`output_dropout`) before
    the decoder. A cell
    that takes token ids (`tensor_rnn`) reads the ids directly, in one layer
    and without an embedding. Under a mixed dtype policy
    (`keras.config.set_dtype_policy("mixed_bfloat16")`) the layers compute in
    16 bits and the logits are still float32.

    Args:
        cell: Registry name of the cell (see `zoo.available_cells()`).
        vocab_size: Positive integer, the number of token ids.
        units: Positive integer, the hidden size of every layer.
        embedding_dim: Size of the embedding. Default: `units`.
        num_layers: Number of stacked recurrent layers. Default: 1.
        dropout: Variational dropout rate in [0, 1) on the embedding and
            between layers. Default: 0.
        tie_embeddings: Whether the decoder is the transposed embedding
            (Press & Wolf 2017); a linear projection to `embedding_dim` is
            added when it differs from `units`. Default: `False`.
        stateful: Whether the recurrent state carries over between batches
            (truncated BPTT); needs `batch_size`. Default: `False`.
        batch_size: Fixed batch size, required when `stateful`.
        output_dropout: Variational dropout rate on the last hidden state,
            before the decoder. Default: `dropout`.
        **cell_options: Passed to the cell's constructor.

    Example:

    >>> model = language_model("mlstm", vocab_size=50, units=64, num_layers=2)
    >>> model(np.zeros((3, 7), "int32")).shape
    (3, 7, 50)
    """
    return LanguageModel(
        cell,
        vocab_size,
        units,
        embedding_dim=embedding_dim,
        num_layers=num_layers,
        dropout=dropout,
        tie_embeddings=tie_embeddings,
        stateful=stateful,
        batch_size=batch_size,
        output_dropout=output_dropout,
        cell_options=cell_options,
    )


@keras.saving.register_keras_serializable(package="zoo")
class LanguageModel(ZooModel):
    """A language model: token ids to next-token logits (`language_model`).

    The constructor takes `language_model`'s arguments, the cell's options
    as the dict `cell_options`; they are its config. Parts: `backbone` (a
    `zoo.Backbone`, unmasked), `token_embedding`, `recurrent_layers`,
    `projection` (the `Dense` to `embedding_dim` before a tied decoder, or
    None), `decoder` (the logits' `Dense`, or the embedding when
    `tie_embeddings`) and `decoder_input` (the tensor the decoder reads).

    Example:

    >>> model = zoo.LanguageModel("mlstm", vocab_size=50, units=64)
    >>> model(np.zeros((3, 7), "int32")).shape
    (3, 7, 50)
    """

    def __init__(
        self,
        cell,
        vocab_size,
        units,
        embedding_dim=None,
        num_layers=1,
        dropout=0.0,
        tie_embeddings=False,
        stateful=False,
        batch_size=None,
        output_dropout=None,
        cell_options=None,
        **kwargs,
    ):
        check_token_id_cell(
            cell,
            num_layers=num_layers,
            embedding_dim=embedding_dim,
            tie_embeddings=tie_embeddings,
        )
        backbone = Backbone(
            cell,
            vocab_size,
            units,
            embedding_dim=embedding_dim,
            num_layers=num_layers,
            dropout=dropout,
            output_dropout=output_dropout,
            masked=False,
            stateful=stateful,
            batch_size=batch_size,
            cell_options=cell_options,
        )
        x = backbone.output
        projection = None
        if tie_embeddings:
            if units != (embedding_dim or units):
                projection = keras.layers.Dense(
                    embedding_dim, use_bias=False, name="projection"
                )
                x = projection(x)
            logits = backbone.token_embedding(x, reverse=True)
            # Under a mixed policy the tied decoder computes in the low
            # precision; the logits are float32 as the untied decoder's are.
            head = keras.layers.Activation(None, dtype="float32", name="float32_logits")
            logits = head(logits)
            decoder = backbone.token_embedding
        else:
            head = keras.layers.Dense(vocab_size, dtype="float32", name="logits")
            logits = head(x)
            decoder = head
        kwargs.setdefault("name", f"{cell}_language_model")
        super().__init__(backbone.input, logits, **kwargs)
        self.backbone = backbone
        self.token_embedding = backbone.token_embedding
        self.recurrent_layers = backbone.recurrent_layers
        self.projection = projection
        self.decoder = decoder
        self.heads = {self.output_names[0]: head}
        self.cell = cell
        self.vocab_size = vocab_size
        self.units = units
        self.embedding_dim = embedding_dim
        self.num_layers = num_layers
        self.dropout = dropout
        self.tie_embeddings = tie_embeddings
        self.stateful = stateful
        self.batch_size = batch_size
        self.output_dropout = backbone.output_dropout
        self.cell_options = dict(cell_options or {})

    @property
    def decoder_input(self):
        """The tensor the decoder reads: `(batch, time, embedding_dim or units)`."""
        return (self.projection or self.backbone).output

    def text_outputs(self, ids, start_id=None):
        """`lengths`, next-token `log_probabilities`, each `log_likelihood`."""
        from zoo import serving

        inputs, targets = serving.read_after_start(ids, start_id)
        padded = inputs.to_tensor(0)  # [batch, time]
        logits = self(padded, training=False)
        scores = serving.language_scores(logits, padded, targets)
        return {"lengths": ids.row_lengths(), **scores}

    generates = True  # zoo.sampler.Sampler and serve_generate sample it

    def step_outputs(self, outputs):
        """One step's `log_probabilities` `(batch, vocab)` of the next token."""
        return {"log_probabilities": ops.log_softmax(outputs)}

    def generate(self, prompts, max_length, **options):
        """Samples up to `max_length` tokens after each prompt, in one compiled
        loop: `zoo.sampler.generate(self, prompts, max_length, **options)`.

        Returns a `zoo.sampler.Generated` `(ids, lengths)`; the options
        (`temperature`, `top_k`, `greedy`, `seed`, `stop_ids`, `never_ids`)
        and their checks are `zoo.sampler.generate`'s.
        """
        from zoo import sampler

        return sampler.generate(self, prompts, max_length, **options)


def recognizer(
    cell,
    vocab_size,
    units,
    embedding_dim=None,
    num_layers=1,
    dropout=0.0,
    **cell_options,
):
    """Builds a recognizer from token ids to next-symbol logits and acceptance.

    The model maps int token ids `(batch, time)`, with 0 as padding, to a
    dict of two per-step heads:

    - `"next_symbol"`: logits `(batch, time, vocab_size)` of the next token;
    - `"accept"`: the probability `(batch, time, 1)` that the string is in
      the language (a sigmoid).

    Tokens go through an embedding with `mask_zero=True`, so padded steps
    neither change the recurrent state nor count in the loss; a cell that
    reads token ids (`takes_token_ids`, e.g. `tensor_rnn`) reads them
    directly, with the same mask. Compile with
    `model.compile(optimizer, **hybrid_recognition_loss())`; the targets are
    a dict with `"next_symbol"` ids `(batch, time)` and `"accept"` labels
    `(batch, time, 1)`, the shape of the head (Keras reduces a squared error
    over the last axis, so labels `(batch, time)` would be averaged over
    time before the mask applies): see `recognition_targets`.

    Args:
        cell: Registry name of the cell (see `zoo.available_cells()`).
        vocab_size: Positive integer, the number of token ids, padding 0
            included.
        units: Positive integer, the cell's hidden size.
        embedding_dim: Size of the embedding. Default: `units`.
        num_layers: Number of stacked recurrent layers (the first is named
            `"recurrent"`, the others `"recurrent_1"`, ...). Default: 1.
        dropout: Variational dropout rate in [0, 1) on the embedding and
            after each recurrent layer. Default: 0.
        **cell_options: Passed to the cell's constructor (for the stack
            cells: `stack_depth`, `noise_stddev`, ...).

    Example:

    >>> model = recognizer("diffstk_rnn", vocab_size=7, units=8, stack_depth=32)
    >>> model.compile("adam", **hybrid_recognition_loss())
    >>> outputs = model(np.ones((3, 5), "int32"))
    >>> outputs["next_symbol"].shape, outputs["accept"].shape
    ((3, 5, 7), (3, 5, 1))
    """
    return Recognizer(
        cell,
        vocab_size,
        units,
        embedding_dim=embedding_dim,
        num_layers=num_layers,
        dropout=dropout,
        cell_options=cell_options,
    )


@keras.saving.register_keras_serializable(package="zoo")
class Recognizer(ZooModel):
    """A recognizer: token ids to next-symbol logits and acceptance (`recognizer`).

    The constructor takes `recognizer`'s arguments, the cell's options as
    the dict `cell_options`; they are its config. Parts: `backbone` (a
    masked `zoo.Backbone`), `token_embedding`, `recurrent_layers`,
    `next_symbol` and `accept` (the two heads' `Dense` layers).

    Example:

    >>> model = zoo.Recognizer("lstm", vocab_size=7, units=8)
    >>> sorted(model(np.ones((3, 5), "int32")))
    ['accept', 'next_symbol']
    """

    def __init__(
        self,
        cell,
        vocab_size,
        units,
        embedding_dim=None,
        num_layers=1,
        dropout=0.0,
        cell_options=None,
        **kwargs,
    ):
        backbone = Backbone(
            cell,
            vocab_size,
            units,
            embedding_dim=embedding_dim,
            num_layers=num_layers,
            dropout=dropout,
            cell_options=cell_options,
        )
        h = backbone.output
        next_symbol = keras.layers.Dense(
            vocab_size, dtype="float32", name="next_symbol"
        )
        accept = keras.layers.Dense(
            1, activation="sigmoid", dtype="float32", name="accept"
        )
        outputs = {"next_symbol": next_symbol(h), "accept": accept(h)}
        kwargs.setdefault("name", f"{cell}_recognizer")
        super().__init__(backbone.input, outputs, **kwargs)
        self.backbone = backbone
        self.token_embedding = backbone.token_embedding
        self.recurrent_layers = backbone.recurrent_layers
        self.next_symbol = next_symbol
        self.accept = accept
        self.heads = {
            name: {"next_symbol": next_symbol, "accept": accept}[name]
            for name in self.output_names
        }
        self.cell = cell
        self.vocab_size = vocab_size
        self.units = units
        self.embedding_dim = embedding_dim
        self.num_layers = num_layers
        self.dropout = dropout
        self.cell_options = dict(cell_options or {})

    def step_outputs(self, outputs):
        """One step's next-symbol `log_probabilities` and `accept` `(batch,)`,
        the probability that the prefix read so far is in the language."""
        return {
            "log_probabilities": ops.log_softmax(outputs["next_symbol"]),
            "accept": outputs["accept"][:, 0],
        }

    def text_outputs(self, ids, start_id=None):
        """A language model's scores of the next symbol, and `accept` `(batch,)`.

        `accept` is the probability that each whole string is in the
        language, read at the step of its last token.
        """
        import tensorflow as tf

        from zoo import serving

        inputs, targets = serving.read_after_start(ids, start_id)
        padded = inputs.to_tensor(0)  # [batch, time]
        outputs = self(padded, training=False)
        last = inputs.row_lengths() - 1  # the step that read the last token
        accept = tf.gather(outputs["accept"][..., 0], last, batch_dims=1)
        scores = serving.language_scores(outputs["next_symbol"], padded, targets)
        return {"lengths": ids.row_lengths(), "accept": accept, **scores}
