"""Sampled softmax: training a language model's decoder on a few classes a step.

With a large vocabulary the decoder is most of a small language model's
step: at hidden size 64 and WikiText-2's 33,278 words, the logits of every
token, forward and backward, are ~98% of the arithmetic. A sampled softmax
(Jean et al. 2015, "On Using Very Large Target Vocabulary for Neural
Machine Translation"; TensorFlow's `tf.nn.sampled_softmax_loss`) scores
each token's true class against `N` negative classes drawn once per step
and shared by every token of the batch, instead of against the whole
vocabulary. `train.sampled_softmax = N` (0, the default: the full softmax)
turns it on for a language model; only training changes:

- the training forward pass stops at the decoder's input, and the loss is
  the sampled one (`sampled_softmax_loss`), so the `loss` a run logs is the
  sampled softmax's cross-entropy, which is lower than the full one;
- validation (`val_loss`, by which the best model is kept and training
  stops), evaluation, export, generation and presets run the whole model:
  the full softmax over the vocabulary;
- the model saved (`best.keras`) is the ordinary language model.

The negatives are drawn with replacement from the log-uniform (Zipfian)
distribution over the ids, `P(k) = log((k + 2) / (k + 1)) / log(V + 1)`,
which suits vocabularies whose ids rank tokens by decreasing frequency
(`training.data.tokenize.Vocabulary`: `<unk>` and `<eos>`, then the
training tokens by count). Its probabilities are exact for every id, so the
correction is exact: as in TensorFlow (`_compute_sampled_logits`), each
logit has the log of its class's expected count in the sample
(`N P(k)`) subtracted, and a sampled class equal to a token's true class
(an accidental hit) is left out of that token's softmax.
"""

import collections
import math
import types

import keras
from keras import ops

import zoo
from zoo.checks import check_positive_int

# What an accidental hit's logit becomes (TensorFlow adds minus the largest
# float32): its exponential is 0 next to any other logit.
ACCIDENTAL_HIT = -1e30

Decoder = collections.namedtuple("Decoder", ["inputs", "layer", "tied"])
Decoder.__doc__ = """A language model's decoder: the tensor it reads (`inputs`),
its layer, and whether it is the transposed embedding (`tied`)."""


def log_uniform_probability(ids, num_classes):
    """`P(k) = log((k + 2) / (k + 1)) / log(num_classes + 1)` of each id `k`.

    The log-uniform (Zipfian) distribution over `0 .. num_classes - 1` of
    TensorFlow's `log_uniform_candidate_sampler`; float32, shaped as `ids`.
    """
    ids = ops.cast(ids, "float32")
    return (ops.log(ids + 2.0) - ops.log(ids + 1.0)) / math.log(num_classes + 1)


def sample_log_uniform(num_sampled, num_classes, seed=None):
    """`num_sampled` ids drawn with replacement from `log_uniform_probability`.

    `floor(exp(u log(V + 1))) - 1` for `u` uniform in [0, 1) is `k` with
    probability `P(k)` (TensorFlow's `LogUniformSampler`); a round-off at
    the top is clipped to `V - 1`. `seed` is an int or a
    `keras.random.SeedGenerator`. Returns int32 `(num_sampled,)`.
    """
    u = keras.random.uniform((num_sampled,), seed=seed)
    ids = ops.floor(ops.exp(u * math.log(num_classes + 1))) - 1.0
    return ops.clip(ops.cast(ids, "int32"), 0, num_classes - 1)


def sampled_softmax_loss(
    inputs, kernel, bias, labels, sampled, true_expected_count, sampled_expected_count
):
    """Per-token sampled softmax cross-entropy, as `tf.nn.sampled_softmax_loss`.

    For each token `i` with decoder input `h_i` and true class `y_i`, the
    logits are `o_k = h_i . kernel[:, k] + bias[k]` of `y_i` and of every
    sampled class `s_j`, each less the log of its expected count in the
    sample (`log Q`); a sampled class equal to `y_i` (an accidental hit) is
    left out, every copy of it (TensorFlow leaves out one copy: its default
    sampler draws each class at most once). The loss is the cross-entropy
    of `y_i` among those,
    `logsumexp(o_y - log Q_y, o_s - log Q_s) - (o_y - log Q_y)`. With
    every class sampled once and expected counts of 1 it is the full
    softmax's cross-entropy.

    Args:
        inputs: `(tokens, dim)` float, what the decoder reads.
        kernel: `(dim, classes)`, the decoder's kernel (a `Dense` kernel, or
            the transposed embedding of a tied decoder).
        bias: `(classes,)` or None.
        labels: `(tokens,)` int, the true classes.
        sampled: `(num_sampled,)` int, the classes sampled for every token.
        true_expected_count: `(tokens,)`, the expected count of each label
            in the sample.
        sampled_expected_count: `(num_sampled,)`, that of each sampled class.

    Returns:
        `(tokens,)` float32 losses.
    """
    rows = ops.transpose(kernel)  # (classes, dim)
    true_rows = ops.take(rows, labels, axis=0)  # (tokens, dim)
    sampled_rows = ops.take(rows, sampled, axis=0)  # (num_sampled, dim)
    true_logits = ops.sum(inputs * true_rows, axis=-1)  # (tokens,)
    sampled_logits = ops.matmul(inputs, ops.transpose(sampled_rows))  # (tokens, N)
    if bias is not None:
        true_logits = true_logits + ops.take(bias, labels)
        sampled_logits = sampled_logits + ops.take(bias, sampled)
    true_logits = true_logits - ops.log(true_expected_count)
    sampled_logits = sampled_logits - ops.log(sampled_expected_count)
    hits = ops.equal(labels[:, None], sampled[None, :])  # (tokens, N)
    sampled_logits = ops.where(hits, ACCIDENTAL_HIT, sampled_logits)
    logits = ops.concatenate([true_logits[:, None], sampled_logits], axis=-1)
    return ops.logsumexp(logits, axis=-1) - true_logits  # (tokens,)


class LogUniformSampler(keras.layers.Layer):
    """Draws the negative classes of a step: `sample_log_uniform` with a seed state.

    `sample()` returns `num_sampled` ids; `expected_count(ids)` is
    `num_sampled * log_uniform_probability(ids)`. The state of its seed
    generator is saved with the weights (`save_own_variables`), so a run
    resumed from a backup draws what an uninterrupted one would.

    Args:
        num_sampled: Positive integer, the classes drawn per step.
        num_classes: Positive integer, the vocabulary size.
        seed: Int seed of the draws, or None.
    """

    def __init__(self, num_sampled, num_classes, seed=None, **kwargs):
        check_positive_int("num_sampled", num_sampled)
        check_positive_int("num_classes", num_classes)
        super().__init__(**kwargs)
        self.num_sampled = num_sampled
        self.num_classes = num_classes
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.built = True  # no weights

    def sample(self):
        return sample_log_uniform(
            self.num_sampled, self.num_classes, seed=self.seed_generator
        )

    def expected_count(self, ids):
        return self.num_sampled * log_uniform_probability(ids, self.num_classes)

    def save_own_variables(self, store):
        store["0"] = self.seed_generator.state

    def load_own_variables(self, store):
        self.seed_generator.state.assign(store["0"])

    def get_config(self):
        return {
            **super().get_config(),
            "num_sampled": self.num_sampled,
            "num_classes": self.num_classes,
            "seed": self.seed,
        }


def decoder_of(model):
    """The `Decoder` of a `zoo.LanguageModel`: what it reads, its layer, tied or not.

    The model's own parts (`decoder`, `decoder_input`, `tie_embeddings`):
    an untied decoder is the logits' `Dense`; a tied one the embedding,
    called in reverse. Anything else is a one-line `ValueError`.
    """
    if not isinstance(model, zoo.LanguageModel):
        raise ValueError(
            "A sampled softmax trains a language model's decoder; expected a "
            f"zoo.LanguageModel, received model {model.name!r} "
            f"({type(model).__name__})."
        )
    return Decoder(model.decoder_input, model.decoder, tied=model.tie_embeddings)


class SampledSoftmaxModel(keras.Model):
    """A language model trained with a sampled softmax, evaluated with the full one.

    A functional model on the language model's own layers and weights (as
    `zoo.keras_compat.MultiWorkerModel` is), so `fit` trains the language
    model itself and weight files keep its layout. In training (`call` with
    `training=True`) it stops at the decoder's input, and `compute_loss`
    is the mean `sampled_softmax_loss` over the tokens with the
    `sampler`'s classes; otherwise it is the whole model and the loss the
    compiled one (the full cross-entropy: `val_loss`). `save` writes the
    language model alone, so checkpoints are ordinary models. Works on the
    TensorFlow backend (with or without XLA) and on JAX; the sampled path
    computes in float32, as the untied decoder does under a mixed policy.

    Args:
        model: A `zoo.language_model` (tied or untied decoder, stateful or
            not).
        sampler: A layer with `sample()` (int ids `(num_sampled,)`) and
            `expected_count(ids)`, e.g. `LogUniformSampler`.

    Example:

    >>> lm = zoo.language_model("lstm", vocab_size=1000, units=32)
    >>> model = SampledSoftmaxModel(lm, LogUniformSampler(64, 1000, seed=0))
    >>> model.compile("adam", keras.losses.SparseCategoricalCrossentropy(True))
    """

    def __init__(self, model, sampler, **kwargs):
        decoder = decoder_of(model)
        super().__init__(model.inputs, model.outputs, name=model.name, **kwargs)
        self.features = keras.Model(model.inputs, decoder.inputs, name="features")
        self.sampler = sampler
        # Held outside Keras's tracking (a namespace is not tracked): the
        # language model's layers are already this view's, `compute_loss`
        # reads its decoder, and `save` writes it, of its class.
        self.held = types.SimpleNamespace(language_model=model, decoder=decoder)

    def call(self, inputs, training=None, mask=None):
        if training:  # what the decoder reads: (batch, time, dim)
            return self.features(inputs, training=True)
        return super().call(inputs, training=training, mask=mask)

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        if not training:  # y_pred: the whole model's logits
            return super().compute_loss(x, y, y_pred, sample_weight, training=False)
        layer = self.held.decoder.layer  # the language model's own
        if self.held.decoder.tied:
            kernel, bias = ops.transpose(layer.embeddings), None
        else:
            kernel, bias = layer.kernel, layer.bias
        inputs = ops.cast(y_pred, "float32")
        inputs = ops.reshape(inputs, (-1, inputs.shape[-1]))  # (tokens, dim)
        labels = ops.reshape(ops.cast(y, "int32"), (-1,))  # (tokens,)
        sampled = self.sampler.sample()  # (num_sampled,)
        losses = sampled_softmax_loss(
            inputs,
            ops.cast(kernel, "float32"),
            None if bias is None else ops.cast(bias, "float32"),
            labels,
            sampled,
            self.sampler.expected_count(labels),
            self.sampler.expected_count(sampled),
        )
        if sample_weight is not None:  # Keras's sum over the batch size
            losses = losses * ops.reshape(ops.cast(sample_weight, "float32"), (-1,))
        loss = ops.mean(losses)
        for extra in self.losses:  # e.g. regularizers'
            loss = loss + ops.sum(ops.cast(extra, "float32"))
        return loss

    def save(self, filepath, overwrite=True, zipped=None, **kwargs):
        """Saves the language model alone (a `zoo.LanguageModel`, its layers
        shared with this training view), not the view."""
        model = self.held.language_model
        return model.save(filepath, overwrite=overwrite, zipped=zipped, **kwargs)
