"""The kinds of experiment: each builds its data, model, loss and evaluation.

`make_task(recipe)` returns one of:

- `DyckTask` (`task.kind = "dyck"`): next-token prediction on m-bounded
  Dyck-k (START prepended, END predicted), evaluated with WCPA/LDPA.
- `LanguageModelTask` (`"language_model"`): a text corpus, stateful truncated
  BPTT (or shuffled windows), evaluated with cross-entropy, perplexity and
  bits per character over the whole split with the state carried through.

- `DyckClosingTask` (`"dyck_closing"`): the Dyck-RNN's task on the same
  data, the closing bracket's type at every position where the next token
  closes, evaluated with WCPA/LDPA.
- `RecognitionTask` (`"recognition"`): Dyck-n or palindrome recognition
  (Mali et al. 2020) with the hybrid loss, evaluated with accuracy overall
  and per length bin.

Each task exposes `vocabulary`, `vocab_size`, `start_id` (the id a text is
read after, or None), `head` (what the model outputs: `"language_model"`,
`"closing_brackets"` or `"recognizer"`), `splits`, `build_model(stateful,
batch_size)`, `compile_arguments()`, `train_data()`, `validation_data()`,
`callbacks()`, `evaluate(model, split)` and `report(metrics, split)`.
"""

import copy

import keras
import numpy as np
import tensorflow as tf

import zoo
from training import metrics as metrics_lib
from training.data import batching, corpora, dyck, recognition
from training.data.tokenize import Vocabulary


class EpochShuffle(keras.callbacks.Callback):
    """Sets the epoch a seeded, epoch-keyed shuffle reads (see `epoch_shuffled`)."""

    def __init__(self, epoch_variable):
        super().__init__()
        self.epoch_variable = epoch_variable

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_variable.assign(epoch)


def epoch_shuffled(arrays, batch_size, seed):
    """A dataset of `arrays` batches in an order fixed by `(seed, epoch)`.

    Unlike `Dataset.shuffle`, whose order depends on how many times the
    dataset was iterated in this process, the order here is a function of the
    epoch number alone, so a run resumed by `BackupAndRestore` sees the same
    batches as an uninterrupted one. Returns the dataset and the callback that
    tells it the epoch.
    """
    epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
    count = len(arrays[0])
    tensors = tuple(tf.constant(a) for a in arrays)

    def permutation(_):
        order = tf.random.experimental.stateless_shuffle(
            tf.range(count), seed=tf.stack([tf.constant(seed, tf.int64), epoch])
        )
        return tuple(tf.gather(t, order) for t in tensors)

    dataset = tf.data.Dataset.range(1).map(permutation).unbatch()
    return dataset.batch(batch_size), EpochShuffle(epoch)


class Task:
    """What every task shares."""

    def with_recipe(self, recipe):
        """The same data with another recipe's model and training settings.

        Keras Tuner's trials use it: every trial reads the data generated or
        loaded once, and builds and trains the trial's model.
        """
        clone = copy.copy(self)
        clone.recipe = recipe
        return clone


class DyckTask(Task):
    """Next-token prediction on Dyck-(k, m), evaluated with WCPA and LDPA."""

    monitor = "val_loss"
    head = "language_model"
    splits = ("valid", "test")

    def __init__(self, recipe):
        self.recipe = recipe
        task = recipe["task"]
        self.k, self.m = task["k"], task["m"]
        strings = dyck.dyck_splits(
            self.k,
            self.m,
            train=task["train_sequences"],
            dev=task["dev_sequences"],
            test=task["test_sequences"],
            unit="sequences",
            seed=recipe["train"]["seed"],
        )
        self.arrays = {
            "train": dyck.frame(strings["train"], self.k),
            "valid": dyck.frame(strings["dev"], self.k),
            "test": dyck.frame(strings["test"], self.k),
        }
        self.vocabulary = Vocabulary(dyck.token_names(self.k), unk_token=None)
        self.vocab_size = dyck.vocabulary_size(self.k)
        self.start_id = dyck.START_ID
        self._shuffle_callback = None

    def compile_arguments(self):
        return {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}

    def build_model(self, stateful=False, batch_size=None):
        return build_model(self.recipe, self.vocab_size, stateful, batch_size)

    def _columns(self, split):
        arrays = self.arrays[split]
        return arrays.inputs, arrays.targets, arrays.mask

    def train_data(self):
        train = self.recipe["train"]
        dataset, self._shuffle_callback = epoch_shuffled(
            self._columns("train"), train["batch_size"], train["seed"]
        )
        return dataset

    def validation_data(self):
        batch_size = self.recipe["train"]["batch_size"]
        return tf.data.Dataset.from_tensor_slices(self._columns("valid")).batch(
            batch_size
        )

    def callbacks(self):
        return [self._shuffle_callback] if self._shuffle_callback else []

    def next_token_probabilities(self, model, inputs):
        logits = model.predict(inputs, batch_size=256, verbose=0)
        return keras.ops.convert_to_numpy(keras.ops.softmax(logits))

    def evaluate(self, model, split):
        arrays = self.arrays[split]
        probabilities = self.next_token_probabilities(model, arrays.inputs)
        accuracy = metrics_lib.closing_bracket_accuracy(
            probabilities, arrays.close_targets, arrays.distances, k=self.k
        )
        metrics = {
            "wcpa": accuracy.wcpa,
            "mean_ldpa": accuracy.mean_ldpa,
            "pooled_accuracy": accuracy.pooled,
            "ldpa": {str(d): a for d, a in accuracy.ldpa.items()},
            "ldpa_counts": {str(d): n for d, n in accuracy.counts.items()},
            "sequences": len(arrays.inputs),
        }
        if self.head == "language_model":
            entropy = metrics_lib.cross_entropy(
                probabilities, arrays.targets, arrays.mask
            )
            metrics["cross_entropy"] = entropy
            metrics["bits_per_token"] = metrics_lib.bits_per_character(entropy)
        return metrics

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


CORPUS_LOADERS = {
    "ptb": lambda task: corpora.load_ptb(task["level"], data_dir=task["data_dir"]),
    "wikitext2": lambda task: corpora.load_wikitext2(data_dir=task["data_dir"]),
    "wikitext103": lambda task: corpora.load_wikitext103(data_dir=task["data_dir"]),
    "text8": lambda task: corpora.load_text8(data_dir=task["data_dir"]),
    "enwik8": lambda task: corpora.load_enwik8(data_dir=task["data_dir"]),
    "tinyshakespeare": lambda task: corpora.load_tiny_shakespeare(
        data_dir=task["data_dir"]
    ),
}


def load_corpus(task):
    """The corpus a recipe names: a known corpus or a local file or folder."""
    name = task["corpus"]
    if name in CORPUS_LOADERS:
        return CORPUS_LOADERS[name](task)
    if name.startswith("file:"):
        return corpora.load_text(name[len("file:") :], level=task["level"])
    raise ValueError(
        f"Unknown corpus {name!r}; expected one of: {', '.join(CORPUS_LOADERS)}, "
        "or file:PATH for a local text file or folder."
    )


EVAL_ROWS = 10


def closing_as_next_token(closing, k):
    """Closing-bracket probabilities `[..., k]` in the Dyck token layout.

    The result `[..., 3 + 2k]` is zero but for the closing brackets, so the
    WCPA/LDPA of a language model apply to the Dyck-RNN unchanged.
    """
    closing = np.asarray(closing)
    probabilities = np.zeros(closing.shape[:-1] + (dyck.vocabulary_size(k),), "float32")
    first_close = dyck.close_id(0, k)
    probabilities[..., first_close : first_close + k] = closing
    return probabilities


class DyckClosingTask(DyckTask):
    """The Dyck-RNN's task: which bracket closes, where the next token closes.

    The model (`zoo.dyck_rnn_model`) gives, after each token, probabilities
    over the k closing brackets; it is trained on the positions whose next
    token is a closing bracket and evaluated with WCPA/LDPA at every position
    with a non-empty stack, as the language models are.
    """

    head = "closing_brackets"

    def compile_arguments(self):
        return {"loss": keras.losses.SparseCategoricalCrossentropy()}

    def _columns(self, split):
        arrays = self.arrays[split]
        return arrays.inputs, arrays.close_labels, arrays.close_weights

    def next_token_probabilities(self, model, inputs):
        closing = model.predict(inputs, batch_size=256, verbose=0)  # [n, t, k]
        return closing_as_next_token(closing, self.k)


class RecognitionTask(Task):
    """Recognition of Dyck-n or palindromes with Mali et al.'s hybrid loss."""

    monitor = "val_loss"
    head = "recognizer"
    splits = ("valid", "test", "long_120", "long_160")

    def __init__(self, recipe):
        self.recipe = recipe
        self.language = recipe["task"]["language"]
        if recipe["task"]["step_labels"] not in ("string", "prefix"):
            raise ValueError(
                "task.step_labels must be 'string' or 'prefix'; received "
                f"{recipe['task']['step_labels']!r}."
            )
        splits = recognition.mali_splits(
            self.language,
            seed=recipe["train"]["seed"],
            scale=recipe["task"]["split_scale"],
        )
        self.arrays = {
            name: recognition.frame(split, self.language)
            for name, split in splits.items()
        }
        self.vocab_size = recognition.vocabulary_size(self.language)
        names = (
            dyck.token_names(self.vocab_size // 2 - 1)
            if self.language != "palindrome"
            else ["<pad>", "START", "END", "a", "b", "c"]
        )
        self.vocabulary = Vocabulary(names[: self.vocab_size], unk_token=None)
        self.start_id = dyck.START_ID
        self._shuffle_callback = None

    def compile_arguments(self):
        return zoo.hybrid_recognition_loss()

    def build_model(self, stateful=False, batch_size=None):
        return build_model(self.recipe, self.vocab_size)

    def _columns(self, split):
        arrays = self.arrays[split]
        if self.recipe["task"]["step_labels"] == "prefix":
            accept = arrays.prefix_labels  # is the prefix read so far a string?
        else:  # Mali et al.'s loss: the string's label at every step
            accept = np.broadcast_to(arrays.labels[:, None], arrays.mask.shape)
        return (
            arrays.inputs,
            arrays.targets,
            accept[..., None].astype("float32"),
            arrays.mask,
        )

    @staticmethod
    def _as_dicts(inputs, next_symbol, accept, mask):
        targets = {"next_symbol": next_symbol, "accept": accept}
        return inputs, targets, {"next_symbol": mask, "accept": mask}

    def train_data(self):
        train = self.recipe["train"]
        dataset, self._shuffle_callback = epoch_shuffled(
            self._columns("train"), train["batch_size"], train["seed"]
        )
        return dataset.map(self._as_dicts)

    def validation_data(self):
        batch_size = self.recipe["train"]["batch_size"]
        dataset = tf.data.Dataset.from_tensor_slices(self._columns("valid"))
        return dataset.batch(batch_size).map(self._as_dicts)

    def callbacks(self):
        return [self._shuffle_callback] if self._shuffle_callback else []

    def evaluate(self, model, split):
        arrays = self.arrays[split]
        accept = model.predict(arrays.inputs, batch_size=256, verbose=0)["accept"]
        edges = list(range(0, int(arrays.lengths.max()) + 20, 20))
        accuracy = metrics_lib.recognition_accuracy(
            accept[..., 0], arrays.labels, arrays.lengths, bin_edges=edges
        )
        return {
            "accuracy": accuracy.overall,
            "per_length": {
                f"{low + 1}-{high}": {"accuracy": value, "strings": count}
                for (low, high), (value, count) in accuracy.per_bin.items()
                if count
            },
            "strings": len(arrays.labels),
        }

    def report(self, metrics, split):
        lines = [
            f"{split}: accuracy {metrics['accuracy']:.4f} "
            f"({metrics['strings']} strings, {self.language})",
            f"{'length':>10}{'accuracy':>10}{'strings':>9}",
        ]
        for bin_name, value in metrics["per_length"].items():
            lines.append(
                f"{bin_name:>10}{value['accuracy']:>10.4f}{value['strings']:>9}"
            )
        return "\n".join(lines)


class LanguageModelTask(Task):
    """Language modelling on a text corpus with truncated BPTT."""

    monitor = "val_loss"
    head = "language_model"
    splits = ("valid", "test")

    def __init__(self, recipe, vocabulary=None):
        self.recipe = recipe
        task, train = recipe["task"], recipe["train"]
        self._corpus = None
        self._encoded = None
        if vocabulary is None:  # built from the training split only
            self.vocabulary = Vocabulary.build(
                self.corpus.train, level=self.corpus.level, add_eos=self.corpus.add_eos
            )
        else:  # a saved run's: the corpus is read only if data are needed
            self.vocabulary = vocabulary
        self.vocab_size = len(self.vocabulary)
        # Text is read after an end of line, as the corpus's lines are.
        self.start_id = self.vocabulary.eos_id if self.vocabulary.add_eos else None
        self.stateful = train["stateful"]
        self.batch_size = train["batch_size"]
        self.sequence_length = task["sequence_length"]
        self._shuffle_callback = None

    @property
    def corpus(self):
        if self._corpus is None:
            self._corpus = load_corpus(self.recipe["task"])
        return self._corpus

    @property
    def encoded(self):
        if self._encoded is None:
            self._encoded = {
                split: self.vocabulary.encode(text, on_oov="unk", split=split)
                for split, text in self.corpus.splits().items()
            }
        return self._encoded

    def compile_arguments(self):
        return {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}

    def build_model(self, stateful=None, batch_size=None):
        stateful = self.stateful if stateful is None else stateful
        batch_size = batch_size or (self.batch_size if stateful else None)
        return build_model(self.recipe, self.vocab_size, stateful, batch_size)

    def _tbptt(self, split):
        inputs, targets = batching.tbptt_arrays(
            self.encoded[split].ids, self.batch_size, self.sequence_length
        )
        return tf.data.Dataset.from_tensor_slices((inputs, targets))

    def train_data(self):
        if self.stateful:
            return self._tbptt("train")
        inputs, targets = batching.tbptt_arrays(
            self.encoded["train"].ids, self.batch_size, self.sequence_length
        )
        flat = (
            inputs.reshape(-1, self.sequence_length),
            targets.reshape(-1, self.sequence_length),
        )
        dataset, self._shuffle_callback = epoch_shuffled(
            flat, self.batch_size, self.recipe["train"]["seed"]
        )
        return dataset

    def validation_data(self):
        return self._tbptt("valid")

    def callbacks(self):
        callbacks = [self._shuffle_callback] if self._shuffle_callback else []
        if self.stateful:
            callbacks.append(ResetStatesEachEpoch())
        return callbacks

    def evaluate(self, model, split):
        """Cross-entropy over the split, read as `EVAL_ROWS` contiguous rows.

        The state is carried from each row's start to its end (the last
        `(tokens - 1) % EVAL_ROWS` tokens are left out; `tokens` says how
        many were scored).
        """
        evaluator = self.build_model(stateful=True, batch_size=EVAL_ROWS)
        evaluator.set_weights(model.get_weights())
        zoo.reset_states(evaluator)
        ids = self.encoded[split].ids
        total, count = 0.0, 0
        for inputs, targets in batching.tbptt_arrays(
            ids,
            EVAL_ROWS,
            min(self.sequence_length * 8, (len(ids) - 1) // EVAL_ROWS),
            drop_remainder=False,
        ):
            logits = evaluator(inputs, training=False)
            losses = keras.losses.sparse_categorical_crossentropy(
                targets, logits, from_logits=True
            )
            total += float(keras.ops.sum(losses))
            count += targets.size
        entropy = total / count
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


class ResetStatesEachEpoch(keras.callbacks.Callback):
    """Zeroes the recurrent state before each epoch and each evaluation."""

    def on_epoch_begin(self, epoch, logs=None):
        zoo.reset_states(self.model)

    def on_test_begin(self, logs=None):
        zoo.reset_states(self.model)

    def on_test_end(self, logs=None):
        zoo.reset_states(self.model)


def build_model(recipe, vocab_size, stateful=False, batch_size=None):
    """Builds the model of `recipe` for a vocabulary of `vocab_size` ids."""
    kind, model = recipe["task"]["kind"], recipe["model"]
    if kind == "dyck_closing":
        if model["cell"] != "dyck_rnn":
            raise ValueError(
                "task.kind 'dyck_closing' trains the Dyck-RNN; expected "
                f"model.cell='dyck_rnn', received {model['cell']!r}."
            )
        task = recipe["task"]
        return zoo.dyck_rnn_model(task["k"], task["m"], **model["options"])
    if kind == "recognition":
        return zoo.recognizer(
            model["cell"],
            vocab_size,
            model["units"],
            embedding_dim=model["embedding_dim"],
            **model["options"],
        )
    return zoo.language_model(
        model["cell"],
        vocab_size,
        model["units"],
        embedding_dim=model["embedding_dim"],
        num_layers=model["num_layers"],
        dropout=model["dropout"],
        output_dropout=model["output_dropout"],
        tie_embeddings=model["tie_embeddings"],
        stateful=stateful,
        batch_size=batch_size,
        **model["options"],
    )


TASKS = {
    "dyck": DyckTask,
    "dyck_closing": DyckClosingTask,
    "language_model": LanguageModelTask,
    "recognition": RecognitionTask,
}


def make_task(recipe, vocabulary=None):
    """Returns the task object of `recipe["task"]["kind"]`."""
    kind = recipe["task"]["kind"]
    if kind not in TASKS:
        raise ValueError(
            f"Unknown task kind {kind!r}; expected one of: {', '.join(sorted(TASKS))}."
        )
    if vocabulary is not None and kind == "language_model":
        return TASKS[kind](recipe, vocabulary)
    return TASKS[kind](recipe)
