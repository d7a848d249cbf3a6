"""The trivial baseline of a language model: an n-gram with add-k smoothing.

A language-model preset is worth shipping only when it beats what counting
does on the same split (issue 57). `ngram_baseline(task)` counts the
task's training split's n-grams in its own vocabulary, chooses the
smoothing constant k on the validation split (never the test split) and
scores the validation and test splits:

    P(w | u) = (c(u w) + k) / (c(u) + k V)

for a context `u` of the n - 1 tokens before `w`, `V` the vocabulary's
size, `c` counts over the training stream. Every token of a split after its
first is scored with the n - 1 tokens before it in the split's stream (the
first n - 1 with shorter contexts, as the counts of shorter n-grams give
them). The model scores the split in `EVAL_ROWS` rows whose starts see no
context and leaves out its last `(tokens - 1) % EVAL_ROWS` tokens: a
difference of under 20 tokens in tens of thousands.
"""

import math

import numpy as np

# The smoothing constants tried on the validation split.
K_GRID = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0)


class NGramCounts:
    """Counts of the n-grams of orders 1..n of a token stream."""

    def __init__(self, ids, order, vocab_size):
        if order < 1:
            raise ValueError(f"order must be an integer >= 1; received {order!r}.")
        ids = np.asarray(ids, dtype=np.int64)
        if vocab_size**order >= 2**62:
            raise ValueError(
                f"A {order}-gram over {vocab_size:,} tokens does not fit a 64-bit "
                "key; expected a smaller order or vocabulary."
            )
        self.order, self.vocab_size = order, vocab_size
        # grams[n]: (sorted keys of the n-grams seen, their counts), n >= 1;
        # an n-gram's key is its tokens read as a number in base vocab_size.
        self.grams = {
            n: np.unique(_keys(ids, n, vocab_size), return_counts=True)
            for n in range(1, order + 1)
        }
        # contexts[n]: the same for the n-grams a token follows (each
        # context's count is the sum of its continuations': P sums to 1)
        self.contexts = {
            n: np.unique(_keys(ids[:-1], n, vocab_size), return_counts=True)
            for n in range(1, order)
        }
        self.total = len(ids)

    @staticmethod
    def count(keys, table):
        """The training counts in `table` of the n-grams with `keys` (0: unseen)."""
        seen, counts = table
        where = np.minimum(np.searchsorted(seen, keys), len(seen) - 1)
        return np.where(seen[where] == keys, counts[where], 0)

    def lookup(self, ids):
        """Per token of `ids` after its first: the training counts of its
        n-gram and of the context before it (the stream's start gives the
        first n - 2 tokens shorter contexts). What add-k reads, for any k."""
        ids = np.asarray(ids, dtype=np.int64)
        n = self.order
        start = max(1, n - 1)
        pieces = [
            (_keys(ids[: i + 1], i + 1, self.vocab_size), i + 1)
            for i in range(1, min(n - 1, len(ids)))
        ] + [(_keys(ids[start - (n - 1) :], n, self.vocab_size), n)]
        grams, contexts = [], []
        for keys, length in pieces:
            grams.append(self.count(keys, self.grams[length]))
            if length == 1:
                contexts.append(np.full(len(keys), self.total))
            else:
                table = self.contexts[length - 1]
                contexts.append(self.count(keys // self.vocab_size, table))
        return np.concatenate(grams), np.concatenate(contexts)

    def losses(self, ids, k, looked_up=None):
        """The loss in nats of every token of `ids` after its first, add-k
        (`looked_up`: `lookup(ids)`, when already read)."""
        grams, contexts = self.lookup(ids) if looked_up is None else looked_up
        return np.log(contexts + k * self.vocab_size) - np.log(grams + k)


def _keys(ids, n, vocab_size):
    """The key of every n-gram of the stream `ids`, in order."""
    keys = np.zeros(len(ids) - n + 1, dtype=np.int64)
    for offset in range(n):
        keys = keys * vocab_size + ids[offset : len(ids) - n + 1 + offset]
    return keys


def scores(losses):
    """The metrics of a split's token losses in nats, as the task reports them."""
    entropy = float(np.mean(losses, dtype=np.float64))
    return {
        "cross_entropy": entropy,
        "perplexity": math.exp(entropy),
        "bits_per_token": entropy / math.log(2),
        "tokens": int(len(losses)),
    }


def ngram_baseline(task, order=3, ks=K_GRID):
    """The add-k n-gram of `task`'s training split, k chosen on validation.

    Args:
        task: A `LanguageModelTask` (its `encoded` splits and `vocab_size`).
        order: n (3: a trigram).
        ks: The smoothing constants tried on the validation split.

    Returns:
        `{"name", "order", "k", "valid": metrics, "test": metrics}`, each
        metrics dict as `scores` gives it.
    """
    counts = NGramCounts(task.encoded["train"].ids, order, task.vocab_size)
    valid = task.encoded["valid"].ids
    looked_up = counts.lookup(valid)  # the same counts for every k
    best = min(ks, key=lambda k: float(np.mean(counts.losses(valid, k, looked_up))))
    return {
        "name": f"{order}-gram, add-k smoothing (k chosen on the valid split)",
        "order": order,
        "k": best,
        "valid": scores(counts.losses(valid, best, looked_up)),
        "test": scores(counts.losses(task.encoded["test"].ids, best)),
    }
