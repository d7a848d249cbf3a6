import math

import numpy as np
import pytest

from training.data import ngram_baseline
from training.data.ngram_baseline import NGramCounts


def reference_losses(train, ids, order, k, vocab_size):
    """Add-k n-gram losses counted one n-gram at a time, in Python."""
    train = [int(t) for t in train]
    losses = []
    for i in range(1, len(ids)):
        context = tuple(int(t) for t in ids[max(0, i - order + 1) : i])
        n = len(context) + 1
        grams = [tuple(train[j : j + n]) for j in range(len(train) - n + 1)]
        numerator = grams.count((*context, int(ids[i]))) + k
        if n == 1:
            denominator = len(train) + k * vocab_size
        else:
            # a context is counted where a token follows it
            heads = [tuple(train[j : j + n - 1]) for j in range(len(train) - n + 1)]
            denominator = heads.count(context) + k * vocab_size
        losses.append(math.log(denominator / numerator))
    return np.array(losses)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_losses_are_the_add_k_counts(order):
    rng = np.random.default_rng(order)
    train, ids = rng.integers(0, 5, size=300), rng.integers(0, 5, size=40)
    counts = NGramCounts(train, order, vocab_size=5)
    expected = reference_losses(train, ids, order, 0.3, 5)
    np.testing.assert_allclose(counts.losses(ids, 0.3), expected, rtol=1e-12)


def test_each_context_gives_a_distribution():
    rng = np.random.default_rng(7)
    train = rng.integers(0, 4, size=500)
    counts = NGramCounts(train, 3, vocab_size=4)
    for context in ([0, 1], [3, 3], [2, 0]):
        probabilities = [
            math.exp(-counts.losses(np.array([*context, w]), 0.1)[-1]) for w in range(4)
        ]
        np.testing.assert_allclose(sum(probabilities), 1.0, rtol=1e-12)


class FakeTask:
    """The splits and vocabulary size of a language-model task."""

    def __init__(self, splits, vocab_size):
        self.encoded = {
            name: type("Encoded", (), {"ids": np.asarray(ids)})()
            for name, ids in splits.items()
        }
        self.vocab_size = vocab_size


def test_k_is_chosen_on_the_valid_split_and_the_test_split_scored_with_it():
    rng = np.random.default_rng(3)
    # a text where each token mostly repeats the one two before it
    stream = [0, 1]
    for _ in range(3000):
        stream.append(stream[-2] if rng.random() < 0.9 else int(rng.integers(6)))
    stream = np.array(stream)
    task = FakeTask(
        {"train": stream[:2000], "valid": stream[2000:2500], "test": stream[2500:]},
        vocab_size=6,
    )
    baseline = ngram_baseline.ngram_baseline(task, order=3, ks=(1e-3, 1.0, 30.0))
    counts = NGramCounts(stream[:2000], 3, 6)
    valid = {k: np.mean(counts.losses(stream[2000:2500], k)) for k in (1e-3, 1, 30)}
    assert baseline["k"] == min(valid, key=valid.get)
    test = counts.losses(stream[2500:], baseline["k"])
    assert baseline["test"]["tokens"] == len(stream) - 2500 - 1
    np.testing.assert_allclose(baseline["test"]["cross_entropy"], test.mean())
    np.testing.assert_allclose(
        baseline["test"]["bits_per_token"], test.mean() / math.log(2)
    )
    assert baseline["order"] == 3 and baseline["test"]["perplexity"] < 3


@pytest.mark.parametrize(
    "order, vocab_size, message",
    [(0, 5, "order must be an integer >= 1"), (5, 10**13, "does not fit")],
)
def test_invalid_arguments(order, vocab_size, message):
    with pytest.raises(ValueError, match=message):
        NGramCounts(np.arange(5), order, vocab_size)
