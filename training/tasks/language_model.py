"""Language modelling on a text corpus with truncated BPTT."""

import dataclasses
import functools
from typing import ClassVar

import tensorflow as tf

from training.core import compile_mode, sampled_softmax, scoring
from training.core import metrics as metrics_lib
from training.core.callbacks import ResetStatesEachEpoch
from training.core.config.model_arguments import LanguageModelArguments
from training.core.config.option_fields import RecipeError, option
from training.core.config.task_options import TaskOptions
from training.data import batching, conventions, corpora, ngram_baseline, tokenize
from training.tasks.task import Task

EVAL_ROWS = 10  # a language model is evaluated on this many contiguous rows


@dataclasses.dataclass(frozen=True)
class LanguageModelOptions(TaskOptions):
    """A text corpus (`training.data.corpora`) read at `level`, in windows of
    `sequence_length` tokens.

    `data_dir`: where the corpus is (None: the data directory's default);
    `train_cutoff`: training lines cut at that many symbols (None: whole).
    Trains statefully (`train.stateful`, `train.reset_every`) or with a
    sampled softmax (`train.sampled_softmax`) too.
    """

    kind: ClassVar[str] = "language_model"
    model_arguments: ClassVar[type] = LanguageModelArguments
    train_options: ClassVar[frozenset] = frozenset(
        {"stateful", "reset_every", "sampled_softmax"}
    )

    corpus: str = option("ptb")
    level: str = option("char")
    data_dir: str | None = option(None)
    sequence_length: int = option(100, low=1, high=10_000)
    train_cutoff: int | None = option(None, low=1)

    def check(self, recipe):
        try:
            corpora.check_corpus_name(self.corpus)
            corpora.check_level(self.corpus, self.level)
        except ValueError as error:
            raise RecipeError(str(error)) from None

    def summary(self):
        return f"{self.level}-level language model on {self.corpus}"


class LanguageModelTask(Task):
    """Language modelling on a text corpus with truncated BPTT."""

    options = LanguageModelOptions

    def __init__(self, recipe, vocabulary=None):
        train = recipe.train
        self.stateful = train.stateful
        self.batch_size = train.batch_size
        self.sequence_length = recipe.task.sequence_length
        super().__init__(recipe, vocabulary)
        sampled = train.sampled_softmax
        if sampled >= self.vocab_size:
            raise ValueError(
                f"train.sampled_softmax={sampled} samples negative classes from "
                f"the {self.vocab_size}-token vocabulary; expected fewer than "
                f"{self.vocab_size} (or 0: the full softmax)."
            )
        # Text is read after an end of line, as the corpus's lines are.
        self.start_id = self.vocabulary.eos_id if self.vocabulary.add_eos else None

    @property
    def card_sample(self):
        """A preset card's sample: at temperature 0.8, about a paragraph (60
        words or 300 characters), after the first three words of the
        validation split (PTB's: "consumers may want"), which the model's
        vocabulary holds whatever the corpus."""
        start = self.tokenizer().pieces(self.encoded["valid"].ids[:64])
        prompt = " ".join("".join(start).split()[:3])
        length = 60 if self.recipe.task.level == "word" else 300
        return {"prompt": prompt, "length": length, "temperature": 0.8, "seed": 0}

    def own_vocabulary(self):
        """Built from the training split only; names the corpus's conventions."""
        corpus = self.corpus
        return tokenize.Vocabulary.build(
            corpus.train,
            level=corpus.level,
            add_eos=corpus.add_eos,
            conventions=self.conventions,
        )

    @property
    def conventions(self):
        """The name of the corpus's spelling conventions (`zoo.text_conventions`),
        from the recipe's corpus; reads no data."""
        task = self.recipe.task
        return conventions.for_corpus(task.corpus, task.level)

    @functools.cached_property
    def corpus(self):
        """The recipe's corpus, read on first use."""
        task = self.recipe.task
        return corpora.load_corpus(
            task.corpus, level=task.level, data_dir=task.data_dir
        )

    @functools.cached_property
    def texts(self):
        """Split name -> the text the task reads.

        With `task.train_cutoff`, the training lines are cut to that many
        symbols (`corpora.cut_lines`); validation and test stay whole.
        """
        texts = self.corpus.splits()
        cutoff = self.recipe.task.train_cutoff
        if cutoff is not None:
            texts["train"] = corpora.cut_lines(
                texts["train"], cutoff, self.corpus.level
            )
        return texts

    @functools.cached_property
    def encoded(self):
        """Split name -> `EncodedText` of `texts` in the task's vocabulary."""
        return {
            split: self.vocabulary.encode(text, on_oov="unk", split=split)
            for split, text in self.texts.items()
        }

    def build_model(self, stateful=None, batch_size=None):
        """The recipe's language model; stateful as `train.stateful` by default."""
        stateful = self.stateful if stateful is None else stateful
        batch_size = batch_size or (self.batch_size if stateful else None)
        return super().build_model(stateful, batch_size)

    def training_model(self, model):
        """`model`, or with `train.sampled_softmax=N` (> 0) `model` trained with a
        sampled softmax over N log-uniform classes a step
        (`training.core.sampled_softmax.SampledSoftmaxModel`); evaluation and the
        saved model keep the full softmax."""
        train = self.recipe.train
        if not train.sampled_softmax:
            return model
        sampler = sampled_softmax.LogUniformSampler(
            train.sampled_softmax, self.vocab_size, seed=train.seed
        )
        return sampled_softmax.SampledSoftmaxModel(model, sampler)

    def _tbptt(self, split):
        return batching.tbptt_arrays(
            self.encoded[split].ids, self.batch_size, self.sequence_length
        )

    def make_train_data(self):
        inputs, targets = self._tbptt("train")
        if self.stateful:  # row b of a batch continues row b of the last one
            text = tf.data.Dataset.from_tensor_slices((inputs, targets))
            train = self.recipe.train
            callbacks = [ResetStatesEachEpoch(train.reset_every)]
            steps = train.max_steps_per_epoch
            if steps is None:
                return text, callbacks
            # Epochs of `steps` batches of the text, read again and again.
            stream, epoch = batching.capped_epochs(
                lambda first: text.repeat(), steps, pass_batches=len(inputs)
            )
            return stream, [*callbacks, epoch]
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
        many were scored). A byte or character model on a corpus of words
        (WikiText) also reports `words` and `word_perplexity`
        (`_word_metrics`).
        """
        segment = self.sequence_length * 8
        choice = compile_mode.choose(
            self.recipe.train.jit_compile,
            self.recipe.model.units,
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
        metrics = {
            "cross_entropy": entropy,
            "perplexity": metrics_lib.perplexity(entropy),
            "bits_per_token": metrics_lib.bits_per_character(entropy),
            "tokens": count,
            "out_of_vocabulary": self.encoded[split].num_oov,
        }
        return metrics | self._word_metrics(split, metrics["bits_per_token"])

    def trivial_baseline(self):
        """The add-k trigram of the training split, k chosen on the valid
        split (`training.data.ngram_baseline`)."""
        return ngram_baseline.ngram_baseline(self, order=3)

    def _word_metrics(self, split, bits_per_symbol):
        """`words` and `word_perplexity` of a byte or character model on a
        corpus of words (Krause et al., 2016, eq. 23); else nothing.

        The split's bits per symbol times its symbols over its words, as the
        word-level corpus counts them (`tokenize.count_words`), so the
        perplexity is comparable with a word-level model's on the same files.
        """
        if self.corpus.level == "word" or not self.corpus.word_text:
            return {}
        words = tokenize.count_words(self.texts[split])
        symbols = len(self.encoded[split])
        return {
            "words": words,
            "word_perplexity": metrics_lib.bits_per_character_to_word_perplexity(
                bits_per_symbol, symbols, words
            ),
        }

    def report(self, metrics, split):
        words = (
            f"; word perplexity {metrics['word_perplexity']:.2f} "
            f"({metrics['words']:,} words)"
            if "word_perplexity" in metrics
            else ""
        )
        return (
            f"{split}: cross-entropy {metrics['cross_entropy']:.4f} nats/token, "
            f"perplexity {metrics['perplexity']:.2f}, "
            f"{metrics['bits_per_token']:.4f} bits/token "
            f"({metrics['tokens']:,} tokens, {metrics['out_of_vocabulary']:,} "
            f"out of vocabulary){words}"
        )
