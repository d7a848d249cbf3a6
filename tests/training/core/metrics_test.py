import math

import numpy as np
import pytest

from training.core import metrics
from training.data import dyck_strings, languages, recognition_sets


def _hand_built():
    # k = 2: ( = 3, [ = 4, ) = 5, ] = 6.  Strings "( [ ] )" and "( )".
    arrays = dyck_strings.frame([np.array([3, 4, 6, 5, 2]), np.array([3, 5, 2])], 2)
    probs = np.full(arrays.targets.shape + (7,), 0.0)
    probs[..., 2] = 1.0  # END everywhere, then overwrite the evaluated positions
    # string 0: position 1 (distance 1, correct ")"): 0.3 / (0.3 + 0.1) = 0.75 -> wrong
    probs[0, 1] = [0, 0, 0, 0.3, 0.3, 0.3, 0.1]
    # position 2 (distance 1, correct "]"): 0.45 / 0.5 = 0.9 -> right
    probs[0, 2] = [0, 0, 0, 0.25, 0.25, 0.05, 0.45]
    # position 3 (distance 3, correct ")"): 0.4 / (0.4 + 0.1) = 0.8 -> right (>=)
    probs[0, 3] = [0, 0, 0, 0.25, 0.25, 0.4, 0.1]
    # string 1: position 1 (distance 1, correct ")"): 0.2 / 0.3 -> wrong
    probs[1, 1] = [0, 0, 0.1, 0.3, 0.3, 0.2, 0.1]
    return arrays, probs


def test_wcpa_ldpa_hand_computed():
    arrays, probs = _hand_built()
    result = metrics.bracket_prediction_accuracy(
        probs, arrays.close_targets, arrays.distances, k=2
    )
    assert result.counts == {1: 3, 3: 1}
    assert result.ldpa == pytest.approx({1: 1 / 3, 3: 1.0})
    assert result.wcpa == pytest.approx(1 / 3)
    assert result.mean_ldpa == pytest.approx(2 / 3)
    assert result.pooled == pytest.approx(2 / 4)
    stricter = metrics.bracket_prediction_accuracy(
        probs, arrays.close_targets, arrays.distances, k=2, threshold=0.85
    )
    assert stricter.ldpa == pytest.approx({1: 1 / 3, 3: 0.0})


def test_recognition_accuracy_overall_and_per_bin():
    scores = np.array([0.9, 0.2, 0.6, 0.4, 0.7])
    labels = np.array([1, 0, 0, 1, 1])
    lengths = np.array([10, 30, 60, 80, 100])
    result = metrics.recognition_accuracy(
        scores, labels, lengths, bin_edges=[0, 55, 102]
    )
    assert result.overall == pytest.approx(3 / 5)
    assert result.per_bin[(0, 55)] == (1.0, 2)
    assert result.per_bin[(55, 102)][0] == pytest.approx(1 / 3)
    per_step = np.zeros((5, 101))
    per_step[np.arange(5), lengths] = scores
    assert metrics.recognition_accuracy(per_step, labels, lengths).overall == 0.6


def framed_split(language, seed=0):
    split = recognition_sets.make_split(language, 200, 2, 41, seed=seed)
    return split, recognition_sets.frame(split, language)


@pytest.mark.parametrize(
    "language, constant",
    [("D2", 0.0), ("D2", 1.0), ("D3", 0.0), ("D3", 1.0), ("palindrome", 1.0)],
)
def test_strict_accuracy_of_constant_answers_is_near_zero(language, constant):
    # Not a constant "reject" on palindromes: it is right at every step of
    # each negative without a palindromic prefix.
    split, arrays = framed_split(language)
    accept = np.full(arrays.prefix_labels.shape, constant)
    final = metrics.recognition_accuracy(accept, arrays.labels, arrays.lengths)
    assert final.overall == 0.5  # balanced: half the strings
    strict = metrics.strict_recognition_accuracy(
        accept, arrays.prefix_labels, arrays.lengths
    )
    assert strict.overall < 0.05


@pytest.mark.parametrize("language", ["D2", "D3", "palindrome"])
def test_strict_accuracy_of_an_exact_recogniser_is_one(language):
    split, arrays = framed_split(language, seed=1)
    accept = np.zeros(arrays.prefix_labels.shape)
    for row, string in enumerate(split.strings):
        for t in range(len(string) + 1):
            accept[row, t] = languages.is_member(string[:t], language)
    # Predict the first legal symbol (END where the prefix is complete).
    rng = np.random.default_rng(0)
    next_symbol = arrays.legal_next + 0.1 * rng.random(arrays.legal_next.shape)
    result = metrics.strict_recognition_accuracy(
        accept,
        arrays.prefix_labels,
        arrays.lengths,
        labels=arrays.labels,
        next_symbol=next_symbol,
        legal_next=arrays.legal_next,
        bin_edges=[0, 20, 41],
    )
    assert result.overall == 1.0
    assert result.per_bin[(0, 20)][0] == result.per_bin[(20, 41)][0] == 1.0
    assert sum(count for _, count in result.per_bin.values()) == 200


def test_strict_accuracy_counts_every_step_and_only_legal_next_on_positives():
    # D2 ( = 3, [ = 4, ) = 5, ] = 6, END = 2; rows: "()" (+), "(]]" (-).
    split = recognition_sets.RecognitionSplit(
        strings=[[3, 5], [3, 6, 6]],
        labels=np.array([1, 0]),
        is_hard=np.array([False, False]),
        min_length=2,
        max_length=3,
    )
    arrays = recognition_sets.frame(split, "D2")
    accept = arrays.prefix_labels * 0.8 + 0.1  # right at every step
    accept[:, 3] = 0.9  # padding of row 0 ("()" has 3 positions), last of row 1
    legal_argmax = np.eye(7)[[[3, 5, 2, 0], [3, 3, 3, 3]]]  # row 1: "(" is illegal

    def strict(accept, next_symbol=None):
        return metrics.strict_recognition_accuracy(
            accept,
            arrays.prefix_labels,
            arrays.lengths,
            labels=arrays.labels,
            next_symbol=next_symbol,
            legal_next=arrays.legal_next,
        ).overall

    assert strict(accept) == 0.5  # the slip at row 1's last step counts
    accept[1, 3] = 0.1
    assert strict(accept) == 1.0  # row 0's padding does not
    # On the positive "()" a closing ")" after "(" is legal, "]" is not; any
    # symbol on the negative is ignored.
    assert strict(accept, legal_argmax) == 1.0
    assert strict(accept, np.eye(7)[[[3, 6, 2, 0], [3, 3, 3, 3]]]) == 0.5
    # After the complete "()" END and "(" are legal, ")" is not.
    assert strict(accept, np.eye(7)[[[3, 5, 3, 0], [6, 6, 6, 6]]]) == 1.0
    assert strict(accept, np.eye(7)[[[3, 5, 5, 0], [6, 6, 6, 6]]]) == 0.5


def test_cross_entropy_perplexity_bpc():
    probs = np.array([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [1 / 3, 1 / 3, 1 / 3]])
    targets = np.array([0, 1, 2])
    ce = metrics.cross_entropy(probs, targets, mask=np.array([1, 1, 0]))
    assert ce == pytest.approx(-(math.log(0.5) + math.log(0.8)) / 2)
    logits = np.log(probs) + 3.0
    assert metrics.cross_entropy(logits, targets, from_logits=True) == pytest.approx(
        metrics.cross_entropy(probs, targets)
    )
    assert metrics.perplexity(math.log(10)) == pytest.approx(10)
    assert metrics.perplexity(2e30) == math.inf  # a diverged model, no OverflowError
    assert metrics.bits_per_character(math.log(2) * 1.5) == pytest.approx(1.5)


def test_bpc_to_word_perplexity_krause_eq_23():
    # Krause et al.: 1.2649 bits/byte on WikiText-2 test = perplexity 88.8.
    ppl = metrics.bits_per_character_to_word_perplexity(1.2649, 1_256_449, 245_569)
    assert round(ppl, 1) == 88.8
    assert metrics.bits_per_character_to_word_perplexity(1.0, 10, 5) == 4.0


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: metrics.bits_per_character_to_word_perplexity(1.0, 0, 5),
            "num_symbols and num_words must be > 0",
        ),
        (
            lambda: metrics.cross_entropy(np.ones((2, 3)) / 3, [0, 1], mask=[0, 0]),
            "at least one unmasked token",
        ),
        (lambda: metrics.recognition_accuracy(np.ones((2, 3)), [1, 0]), "need lengths"),
        (
            lambda: metrics.bracket_prediction_accuracy(
                np.ones((1, 1, 7)), np.zeros((1, 1)), np.zeros((1, 1)), k=2
            ),
            "no evaluated positions",
        ),
        (
            lambda: metrics.strict_recognition_accuracy(
                np.ones((2, 3)), np.ones((2, 4)), [1, 2]
            ),
            "must be equal",
        ),
        (
            lambda: metrics.strict_recognition_accuracy(
                np.ones((2, 3)), np.ones((2, 3)), [1, 3]
            ),
            "every length below T = 3",
        ),
        (
            lambda: metrics.strict_recognition_accuracy(
                np.ones((2, 3)), np.ones((2, 3)), [1, 2], next_symbol=np.ones((2, 3, 5))
            ),
            "next_symbol needs labels and legal_next",
        ),
    ],
)
def test_bad_inputs(call, message):
    with pytest.raises(ValueError, match=message) as info:
        call()
    assert "\n" not in str(info.value)


def test_accuracy_by_group_is_per_group_value_in_sorted_order():
    correct = np.array([[True, False, True], [True, True, False]])
    groups = np.array([[2, 2, 0], [1, 0, 1]])
    found = metrics.accuracy_by_group(correct, groups)
    assert list(found) == [0, 1, 2]
    assert found == {0: (1.0, 2), 1: (0.5, 2), 2: (0.5, 2)}
    assert all(type(group) is int for group in found)
    named = metrics.accuracy_by_group([True, False], np.array(["b", "a"]))
    assert named == {"a": (0.0, 1), "b": (1.0, 1)}
    with pytest.raises(ValueError, match="must be the same size"):
        metrics.accuracy_by_group([True], [1, 2])
