"""The kinds of experiment: each task knows its data, model, loss and evaluation.

`make_task(recipe, vocabulary=None)` returns the task of `recipe["task"]["kind"]`:

- `DyckTask` (`"dyck"`): next-token prediction on m-bounded Dyck-k (START
  prepended, END predicted) by a language model, evaluated with WCPA/LDPA and
  cross-entropy.
- `ClosingBracketTask` (`"closing_bracket"`): the Dyck-RNN's task on the same
  data, the closing bracket's type at every position where the next token
  closes, evaluated with WCPA/LDPA.
- `RecognitionTask` (`"recognition"`): Dyck-n or palindrome recognition
  (Mali et al. 2020) with the hybrid loss, evaluated with accuracy overall
  and per length bin.
- `LanguageModelTask` (`"language_model"`): a text corpus, stateful truncated
  BPTT (or epoch-shuffled windows), evaluated with cross-entropy, perplexity
  and bits per token over the whole split with the state carried through.

Making a task reads no data: the vocabulary (the given one, e.g. a run's
`vocabulary.json`, or the task's own), the start id and the model follow from
the recipe. Data are generated or read the first time `train_data`,
`validation_data` or `evaluate` needs them (a language model without a given
vocabulary reads its training split to build one).

Every task has `recipe`, `vocabulary`, `vocab_size`, `start_id` (the id a
text is read after, or None), `head` (what the model outputs:
`"language_model"`, `"closing_bracket"` or `"recognizer"`), `monitor`,
`splits` and the methods `build_model(stateful=False, batch_size=None)`,
`compile_arguments()`, `train_data()` (the dataset and the callbacks it
needs), `validation_data()`, `evaluate(model, split)`,
`report(metrics, split)` and `with_recipe(recipe)`.
"""

import contextlib
import copy
import functools

import keras
import numpy as np
import tensorflow as tf

import zoo
from training import compile_mode, scoring
from training import metrics as metrics_lib
from training.callbacks import ResetStatesEachEpoch
from training.data import batching, corpora, dyck, recognition
from training.data.tokenize import Vocabulary

EVAL_ROWS = 10  # a language model is evaluated on this many contiguous rows
PREDICT_BATCH = 256
# Under XLA a split is predicted padded to a multiple of this length (and of
# PREDICT_BATCH rows), so a few compiled shapes serve every split.
PREDICT_LENGTH_STEP = 64


class Task:
    """What every task shares: the recipe, the vocabulary, the language model."""

    monitor = "val_loss"
    head = "language_model"
    end_id = None  # the id that ends a generated string, if the task has one
    splits = ("valid", "test")

    def __init__(self, recipe, vocabulary=None):
        self.recipe = recipe
        self.vocabulary = self.own_vocabulary() if vocabulary is None else vocabulary
        self.vocab_size = len(self.vocabulary)

    def own_vocabulary(self):
        """The vocabulary of the task's data (used when none is given)."""
        raise NotImplementedError

    def with_recipe(self, recipe):
        """The same data with another recipe's model and training settings.

        Keras Tuner's trials use it: every trial reads the data generated or
        loaded once, and builds and trains the trial's model.
        """
        clone = copy.copy(self)
        clone.recipe = recipe
        return clone

    def compile_arguments(self):
        return {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}

    def _builder_arguments(self):
        # What `zoo.language_model` and `zoo.recognizer` both take.
        model = self.recipe["model"]
        return {
            "cell": model["cell"],
            "vocab_size": self.vocab_size,
            "units": model["units"],
            "embedding_dim": model["embedding_dim"],
            "num_layers": model["num_layers"],
            "dropout": model["dropout"],
            **model["options"],
        }

    def build_model(self, stateful=False, batch_size=None):
        """The task's model, built under the recipe's `train.precision` policy.

        With `"mixed_bfloat16"` or `"mixed_float16"` the layers keep float32
        weights and compute in the lower precision; the output heads compute
        in float32 (see `zoo.language_model`). The global dtype policy is
        restored afterwards.
        """
        with precision_policy(self.recipe["train"]["precision"]):
            return self._build_model(stateful, batch_size)

    def _build_model(self, stateful, batch_size):
        """The recipe's language model (`zoo.language_model`)."""
        model = self.recipe["model"]
        return zoo.language_model(
            output_dropout=model["output_dropout"],
            tie_embeddings=model["tie_embeddings"],
            stateful=stateful,
            batch_size=batch_size,
            **self._builder_arguments(),
        )

    def train_shape(self):
        """`(batch, length)` of every training step's input (one static shape)."""
        dataset, _ = self.train_data()
        return tuple(tf.nest.flatten(dataset.element_spec)[0].shape)

    def _shuffled(self, columns, **order):
        # `order`: `batching.epoch_shuffled`'s `lengths` and `limits` (curriculum).
        train = self.recipe["train"]
        dataset, shuffle = batching.epoch_shuffled(
            columns, train["batch_size"], train["seed"], **order
        )
        return dataset, [shuffle]

    def _batched(self, columns):
        """The split as one batch: one shape for the compiled test step.

        The loss over one batch is the mean over every weighted token, as
        Keras's batch-size-weighted mean over smaller batches is.
        """
        dataset = tf.data.Dataset.from_tensor_slices(columns)
        return dataset.batch(len(columns[0]), drop_remainder=True)  # a static shape

    def _predict(self, model, inputs):
        """`model.predict` on a split's `inputs` `(strings, length)`.

        With XLA (`compile_mode.choose` at the split's length) the inputs are
        padded with padding ids to multiples of `PREDICT_BATCH` rows and
        `PREDICT_LENGTH_STEP` steps, so every split of a run reuses a few
        compiled shapes; the outputs are cut back (the models are causal, so
        padding after a string changes none of its outputs).
        """
        rows, length = inputs.shape
        padded_length = -(-length // PREDICT_LENGTH_STEP) * PREDICT_LENGTH_STEP
        choice = compile_mode.choose(
            self.recipe["train"]["jit_compile"],
            self.recipe["model"]["units"],
            min(rows, PREDICT_BATCH),
            padded_length,
        )
        compile_mode.apply(model, choice.used)
        if choice.used:
            padded_rows = -(-rows // PREDICT_BATCH) * PREDICT_BATCH
            padded = np.zeros((padded_rows, padded_length), inputs.dtype)
            padded[:rows, :length] = inputs
            inputs = padded
        outputs = model.predict(inputs, batch_size=PREDICT_BATCH, verbose=0)
        return keras.tree.map_structure(lambda x: x[:rows, :length], outputs)


@contextlib.contextmanager
def precision_policy(name):
    """Sets Keras's global dtype policy to `name` inside the block.

    `name` is one of `training.recipes.PRECISIONS`; layers take the policy
    when they are made, so a model built inside keeps it.
    """
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def check_stateless(model_name, stateful):
    """Raises a one-line `ValueError` when a stateless model is asked to be stateful."""
    if stateful:
        raise ValueError(
            f"{model_name} is stateless; expected stateful=False, received True."
        )


def bracket_metrics(probabilities, arrays, k):
    """WCPA, LDPA per distance and pooled accuracy of next-token probabilities."""
    accuracy = metrics_lib.bracket_prediction_accuracy(
        probabilities, arrays.close_targets, arrays.distances, k=k
    )
    return {
        "wcpa": accuracy.wcpa,
        "mean_ldpa": accuracy.mean_ldpa,
        "pooled_accuracy": accuracy.pooled,
        "ldpa": {str(d): a for d, a in accuracy.ldpa.items()},
        "ldpa_counts": {str(d): n for d, n in accuracy.counts.items()},
        "sequences": len(arrays.inputs),
    }


class DyckTask(Task):
    """Next-token prediction on Dyck-(k, m), evaluated with WCPA and LDPA."""

    def __init__(self, recipe, vocabulary=None):
        self.k, self.m = recipe["task"]["k"], recipe["task"]["m"]
        super().__init__(recipe, vocabulary)
        self.start_id = dyck.START_ID
        self.end_id = dyck.END_ID

    def own_vocabulary(self):
        return Vocabulary(dyck.token_names(self.k), unk_token=None)

    @functools.cached_property
    def arrays(self):
        """`{"train", "valid", "test"}` -> `DyckArrays`, generated on first use."""
        task = self.recipe["task"]
        strings = dyck.dyck_splits(
            self.k,
            self.m,
            train=task["train_sequences"],
            dev=task["dev_sequences"],
            test=task["test_sequences"],
            unit="sequences",
            seed=self.recipe["train"]["seed"],
        )
        return {
            "train": dyck.frame(strings["train"], self.k),
            "valid": dyck.frame(strings["dev"], self.k),
            "test": dyck.frame(strings["test"], self.k),
        }

    def _columns(self, split):
        arrays = self.arrays[split]
        return arrays.inputs, arrays.targets, arrays.mask

    def train_data(self):
        return self._shuffled(self._columns("train"))

    def validation_data(self):
        return self._batched(self._columns("valid"))

    def evaluate(self, model, split):
        arrays = self.arrays[split]
        logits = self._predict(model, arrays.inputs)
        probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits))
        entropy = metrics_lib.cross_entropy(probabilities, arrays.targets, arrays.mask)
        return {
            **bracket_metrics(probabilities, arrays, self.k),
            "cross_entropy": entropy,
            "perplexity": metrics_lib.perplexity(entropy),
            "bits_per_token": metrics_lib.bits_per_character(entropy),
        }

    def report(self, metrics, split):
        entropy = (
            f", cross-entropy {metrics['cross_entropy']:.4f} nats/token"
            if "cross_entropy" in metrics
            else ""
        )
        lines = [
            f"{split}: WCPA {metrics['wcpa']:.4f}, mean LDPA "
            f"{metrics['mean_ldpa']:.4f}, pooled {metrics['pooled_accuracy']:.4f}"
            f"{entropy} ({metrics['sequences']} sequences, "
            f"Dyck-({self.k}, {self.m}))",
            f"{'distance':>10}{'LDPA':>10}{'positions':>11}",
        ]
        for distance, value in metrics["ldpa"].items():
            count = metrics["ldpa_counts"][distance]
            lines.append(f"{distance:>10}{value:>10.4f}{count:>11}")
        return "\n".join(lines)


class ClosingBracketTask(DyckTask):
    """The Dyck-RNN's task: which bracket closes, where the next token closes.

    The model (`zoo.dyck_rnn_model`) gives, after each token, probabilities
    over the k closing brackets; it is trained on the positions whose next
    token is a closing bracket and evaluated with WCPA/LDPA at every position
    with a non-empty stack, as the language models are.
    """

    head = "closing_bracket"

    def compile_arguments(self):
        return {"loss": keras.losses.SparseCategoricalCrossentropy()}

    def _build_model(self, stateful, batch_size):
        """The Dyck-RNN of `zoo.dyck_rnn_model`; it is stateless."""
        check_stateless("The Dyck-RNN", stateful)
        return zoo.dyck_rnn_model(self.k, self.m, **self.recipe["model"]["options"])

    def _columns(self, split):
        arrays = self.arrays[split]
        return arrays.inputs, arrays.close_labels, arrays.close_weights

    def evaluate(self, model, split):
        arrays = self.arrays[split]
        closing = self._predict(model, arrays.inputs)
        probabilities = dyck.closing_as_next_token(closing, self.k)
        return bracket_metrics(probabilities, arrays, self.k)


class RecognitionTask(Task):
    """Recognition of Dyck-n or palindromes with Mali et al.'s hybrid loss.

    `task.step_labels` sets the `accept` head's per-step target (the string's
    label, or the prefix's membership); `task.next_symbol_loss` which strings
    train the `next_symbol` head: `"all"`, or `"positives"` (a negative's
    continuation is not a sample of the language; with it in the loss no
    stack cell learned to use its stack, see the README).
    """

    head = "recognizer"
    # "train" for the tables' train columns; "test_mixed": their captions' test
    splits = ("train", "valid", "test", "test_mixed", "long_120", "long_160")

    def __init__(self, recipe, vocabulary=None):
        self.language = recipe["task"]["language"]
        super().__init__(recipe, vocabulary)
        self.start_id = dyck.START_ID

    def own_vocabulary(self):
        return Vocabulary(recognition.token_names(self.language), unk_token=None)

    @functools.cached_property
    def arrays(self):
        """Split name -> `RecognitionArrays`, generated on first use."""
        splits = recognition.mali_splits(
            self.language,
            seed=self.recipe["train"]["seed"],
            scale=self.recipe["task"]["split_scale"],
            hard_negatives=self.recipe["task"]["hard_negatives"],
        )
        return {
            name: recognition.frame(split, self.language)
            for name, split in splits.items()
        }

    def compile_arguments(self):
        return zoo.hybrid_recognition_loss()

    def _build_model(self, stateful, batch_size):
        """The recipe's recognizer (`zoo.recognizer`); it is stateless."""
        check_stateless("A recognizer", stateful)
        return zoo.recognizer(**self._builder_arguments())

    def _columns(self, split):
        arrays = self.arrays[split]
        if self.recipe["task"]["step_labels"] == "prefix":
            accept = arrays.prefix_labels  # is the prefix read so far a string?
        else:  # Mali et al.'s loss: the string's label at every step
            accept = np.broadcast_to(arrays.labels[:, None], arrays.mask.shape)
        next_mask = arrays.mask
        if self.recipe["task"]["next_symbol_loss"] == "positives":
            # A negative string is no sample of the language: its next
            # symbols are noise for a model of the language's strings.
            next_mask = arrays.mask * arrays.labels[:, None].astype(np.float32)
        return (
            arrays.inputs,
            arrays.targets,
            accept[..., None].astype("float32"),
            arrays.mask,
            next_mask,
        )

    @staticmethod
    def _as_dicts(inputs, next_symbol, accept, mask, next_mask):
        targets = {"next_symbol": next_symbol, "accept": accept}
        return inputs, targets, {"next_symbol": next_mask, "accept": mask}

    def train_data(self):
        order = {}
        if self.recipe["train"]["curriculum"]:
            lengths = self.arrays["train"].lengths
            limits = curriculum_limits(lengths, self.recipe["train"]["epochs"])
            order = {"lengths": lengths, "limits": limits}
        dataset, callbacks = self._shuffled(self._columns("train"), **order)
        return dataset.map(self._as_dicts), callbacks

    def validation_data(self):
        return self._batched(self._columns("valid")).map(self._as_dicts)

    def evaluate(self, model, split):
        """Final-step and strict (all-steps) accuracy, overall and per length bin.

        `accuracy`: the `accept` output at the last step
        (`metrics.recognition_accuracy`); `strict_accept`: `accept` right at
        every step for the prefix's membership; `strict`: that and, on
        positive strings, a legal arg-max `next_symbol` at every step
        (`metrics.strict_recognition_accuracy`); `strict_positives`: `strict`
        over the positive strings alone (`positives` of them). Mali et al.'s tables
        correspond to `strict` (see the README).
        """
        arrays = self.arrays[split]
        outputs = self._predict(model, arrays.inputs)
        accept = outputs["accept"][..., 0]
        edges = list(range(0, int(arrays.lengths.max()) + 20, 20))
        final = metrics_lib.recognition_accuracy(
            accept, arrays.labels, arrays.lengths, bin_edges=edges
        )
        strict_accept = metrics_lib.strict_recognition_accuracy(
            accept, arrays.prefix_labels, arrays.lengths, bin_edges=edges
        )
        strict = metrics_lib.strict_recognition_accuracy(
            accept,
            arrays.prefix_labels,
            arrays.lengths,
            labels=arrays.labels,
            next_symbol=outputs["next_symbol"],
            legal_next=arrays.legal_next,
            bin_edges=edges,
        )
        # The same on positive strings only: the reading under which the
        # paper's plain RNNs score near 0 (REPRODUCTION.md, "The metric").
        positive = arrays.labels == 1
        strict_positives = None
        if positive.any():
            strict_positives = metrics_lib.strict_recognition_accuracy(
                accept[positive],
                arrays.prefix_labels[positive],
                arrays.lengths[positive],
                labels=arrays.labels[positive],
                next_symbol=outputs["next_symbol"][positive],
                legal_next=arrays.legal_next[positive],
            ).overall
        per_length = {}
        for (low, high), (value, count) in final.per_bin.items():
            if count:
                per_length[f"{low + 1}-{high}"] = {
                    "accuracy": value,
                    "strict_accept": strict_accept.per_bin[(low, high)][0],
                    "strict": strict.per_bin[(low, high)][0],
                    "strings": count,
                }
        return {
            "accuracy": final.overall,
            "strict_accept": strict_accept.overall,
            "strict": strict.overall,
            "strict_positives": strict_positives,
            "per_length": per_length,
            "strings": len(arrays.labels),
            "positives": int(positive.sum()),
        }

    def report(self, metrics, split):
        positives = metrics.get("strict_positives")
        on_positives = (
            ""
            if positives is None
            else (
                f", strict on positives {positives:.4f} "
                f"({metrics['positives']} strings)"
            )
        )
        lines = [
            f"{split}: strict {metrics['strict']:.4f}, strict accept-only "
            f"{metrics['strict_accept']:.4f}, final-step accuracy "
            f"{metrics['accuracy']:.4f} ({metrics['strings']} strings, "
            f"{self.language}){on_positives}",
            f"{'length':>10}{'strict':>10}{'accept':>10}{'final':>10}{'strings':>9}",
        ]
        for bin_name, value in metrics["per_length"].items():
            lines.append(
                f"{bin_name:>10}{value['strict']:>10.4f}"
                f"{value['strict_accept']:>10.4f}{value['accuracy']:>10.4f}"
                f"{value['strings']:>9}"
            )
        return "\n".join(lines)


def curriculum_limits(lengths, epochs):
    """Per-epoch maximum string length of incremental (curriculum) training.

    Mali et al. (2020, section 4, Table 3) compare sequential training (every
    string, every epoch) with incremental training (Das et al.; curriculum
    learning), feeding strings in increasing length, without a schedule. Ours:
    over the first half of the epochs (`stages = max(1, epochs // 2)`) the
    limit grows linearly from the shortest to the longest training length,
    `shortest + (longest - shortest) * (e + 1) / stages` at epoch e; every
    string seen once stays in (the set grows), and from epoch `stages - 1` on
    the model trains on all strings, as sequential training does.

    Returns:
        int64 `(epochs,)` limits: epoch e trains on strings of length <= it.
    """
    lengths = np.asarray(lengths)
    shortest, longest = int(lengths.min()), int(lengths.max())
    stages = max(1, epochs // 2)
    fraction = np.minimum(np.arange(1, epochs + 1) / stages, 1.0)
    return np.ceil(shortest + (longest - shortest) * fraction).astype(np.int64)


class LanguageModelTask(Task):
    """Language modelling on a text corpus with truncated BPTT."""

    def __init__(self, recipe, vocabulary=None):
        task, train = recipe["task"], recipe["train"]
        self.stateful = train["stateful"]
        self.batch_size = train["batch_size"]
        self.sequence_length = task["sequence_length"]
        super().__init__(recipe, vocabulary)
        # Text is read after an end of line, as the corpus's lines are.
        self.start_id = self.vocabulary.eos_id if self.vocabulary.add_eos else None

    def own_vocabulary(self):
        """Built from the training split only."""
        corpus = self.corpus
        return Vocabulary.build(
            corpus.train, level=corpus.level, add_eos=corpus.add_eos
        )

    @functools.cached_property
    def corpus(self):
        """The recipe's corpus, read on first use."""
        task = self.recipe["task"]
        return corpora.load_corpus(
            task["corpus"], level=task["level"], data_dir=task["data_dir"]
        )

    @functools.cached_property
    def encoded(self):
        """Split name -> `EncodedText` in the task's vocabulary.

        With `task.train_cutoff`, the training lines are cut to that many
        symbols (`corpora.cut_lines`); validation and test stay whole.
        """
        texts = self.corpus.splits()
        cutoff = self.recipe["task"]["train_cutoff"]
        if cutoff is not None:
            texts["train"] = corpora.cut_lines(
                texts["train"], cutoff, self.corpus.level
            )
        return {
            split: self.vocabulary.encode(text, on_oov="unk", split=split)
            for split, text in texts.items()
        }

    def build_model(self, stateful=None, batch_size=None):
        """The recipe's language model; stateful as `train.stateful` by default."""
        stateful = self.stateful if stateful is None else stateful
        batch_size = batch_size or (self.batch_size if stateful else None)
        return super().build_model(stateful, batch_size)

    def _tbptt(self, split):
        return batching.tbptt_arrays(
            self.encoded[split].ids, self.batch_size, self.sequence_length
        )

    def train_data(self):
        inputs, targets = self._tbptt("train")
        if self.stateful:  # row b of a batch continues row b of the last one
            dataset = tf.data.Dataset.from_tensor_slices((inputs, targets))
            every = self.recipe["train"]["reset_every"]
            return dataset, [ResetStatesEachEpoch(every)]
        return self._shuffled(
            (
                inputs.reshape(-1, self.sequence_length),
                targets.reshape(-1, self.sequence_length),
            )
        )

    def validation_data(self):
        return tf.data.Dataset.from_tensor_slices(self._tbptt("valid"))

    def evaluate(self, model, split):
        """Cross-entropy over the split, read as `EVAL_ROWS` contiguous rows.

        The state is carried from each row's start to its end (the last
        `(tokens - 1) % EVAL_ROWS` tokens are left out; `tokens` says how
        many were scored).
        """
        segment = self.sequence_length * 8
        choice = compile_mode.choose(
            self.recipe["train"]["jit_compile"],
            self.recipe["model"]["units"],
            EVAL_ROWS,
            segment,
        )
        compile_mode.configure_determinism(choice.used)
        losses = scoring.token_losses(
            self.build_model,
            model,
            self.encoded[split].ids,
            rows=EVAL_ROWS,
            segment=segment,
            jit_compile=choice.used,
        )
        count = losses.size
        entropy = float(losses.sum(dtype="float64")) / count
        return {
            "cross_entropy": entropy,
            "perplexity": metrics_lib.perplexity(entropy),
            "bits_per_token": metrics_lib.bits_per_character(entropy),
            "tokens": count,
            "out_of_vocabulary": self.encoded[split].num_oov,
        }

    def report(self, metrics, split):
        return (
            f"{split}: cross-entropy {metrics['cross_entropy']:.4f} nats/token, "
            f"perplexity {metrics['perplexity']:.2f}, "
            f"{metrics['bits_per_token']:.4f} bits/token "
            f"({metrics['tokens']:,} tokens, {metrics['out_of_vocabulary']:,} "
            "out of vocabulary)"
        )


TASKS = {
    "dyck": DyckTask,
    "closing_bracket": ClosingBracketTask,
    "recognition": RecognitionTask,
    "language_model": LanguageModelTask,
}


def make_task(recipe, vocabulary=None):
    """Returns the task of a resolved recipe; reads no data.

    Args:
        recipe: A recipe from `training.recipes.resolve` (its kind is checked
            there).
        vocabulary: The vocabulary to use (a run's `vocabulary.json`);
            default: the task's own, which for a language model means reading
            its corpus's training split.
    """
    return TASKS[recipe["task"]["kind"]](recipe, vocabulary)
