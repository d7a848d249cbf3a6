"""Evaluation metrics: Dyck bracket prediction (WCPA/LDPA), recognition, cross-entropy.

- `bracket_prediction_accuracy`: Hewitt et al.'s bracket prediction accuracy
  on m-bounded Dyck-k, of any model that gives next-token probabilities. At
  every position where the stack is non-empty, the prediction is correct
  when p(correct close) / p(any close) >= 0.8. LDPA is that accuracy per
  closing distance, WCPA the minimum LDPA over distances.
- `recognition_accuracy`: string classification accuracy at the last step,
  overall and per length bin; `strict_recognition_accuracy`: a string counts
  only when every step is right (accept and legal next symbol), the
  criterion the tables of Mali et al. (2020) correspond to;
  `recognition_metrics`: all of them for one split, as metrics.json holds them.
- `accuracy_by_group`: the accuracy of labels (tags or classes) per value
  of a grouping (depth, phenomenon, suite).
- `cross_entropy`, `perplexity`, `bits_per_character` and
  `bits_per_character_to_word_perplexity` (Krause et al., 2016, eq. 23).
"""

from __future__ import annotations

import dataclasses
import math

import keras
import numpy as np
from keras import ops

from training.core import backends
from training.data.dyck_strings import FIRST_BRACKET_ID


def bracket_prediction_counts(
    probabilities, close_targets, distances, *, k, threshold=0.8, num_distances
):
    """Correct and evaluated counts per distance (the one implementation).

    Args:
        probabilities: `(N, T, V)` next-token probabilities in the Dyck
            token layout (`training.data.dyck_strings`).
        close_targets: `(N, T)` id of the correct close bracket, 0 where the
            stack is empty (not evaluated).
        distances: `(N, T)` closing distances; values >= `num_distances` are
            counted in the last bin.
        k: number of bracket types.
        threshold: the share of close-bracket probability the correct close
            needs.
        num_distances: number of distance bins (distance 0 is never used).

    Returns:
        `(correct, total)`, two float tensors of shape `(num_distances,)`.
    """
    first_close = FIRST_BRACKET_ID + k
    close_probs = probabilities[..., first_close : first_close + k]  # (N, T, k)
    close_mass = ops.sum(close_probs, axis=-1)  # (N, T)
    evaluated = ops.greater(close_targets, 0)  # (N, T)
    index = ops.clip(ops.cast(close_targets, "int32") - first_close, 0, k - 1)
    correct_prob = ops.take_along_axis(close_probs, index[..., None], axis=-1)
    correct_prob = correct_prob[..., 0]  # (N, T)
    correct = ops.logical_and(
        evaluated,
        ops.logical_and(
            ops.greater(close_mass, 0),
            ops.greater_equal(correct_prob, threshold * close_mass),
        ),
    )
    bins = ops.reshape(
        ops.clip(ops.cast(distances, "int32"), 0, num_distances - 1), (-1,)
    )
    dtype = close_probs.dtype if hasattr(close_probs, "dtype") else "float32"
    correct_counts = ops.segment_sum(
        ops.reshape(ops.cast(correct, dtype), (-1,)), bins, num_segments=num_distances
    )
    total_counts = ops.segment_sum(
        ops.reshape(ops.cast(evaluated, dtype), (-1,)), bins, num_segments=num_distances
    )
    return correct_counts, total_counts


@dataclasses.dataclass
class BracketPredictionAccuracy:
    """Result of `bracket_prediction_accuracy`.

    Attributes:
        ldpa: `{distance: accuracy}` for every distance that occurs.
        wcpa: minimum of `ldpa` (worst-case long-distance accuracy).
        mean_ldpa: mean of `ldpa` over distances.
        pooled: accuracy over all evaluated positions together.
        counts: `{distance: number of evaluated positions}`.
    """

    ldpa: dict
    wcpa: float
    mean_ldpa: float
    pooled: float
    counts: dict


def summarize_bracket_counts(correct, total):
    """LDPA/WCPA/mean/pooled from per-distance `(correct, total)` counts."""
    correct = np.asarray(correct, dtype=np.float64)
    total = np.asarray(total, dtype=np.float64)
    present = np.flatnonzero(total > 0)
    if present.size == 0:
        raise ValueError(
            "no evaluated positions (every stack is empty); expected Dyck strings "
            "with at least one open bracket"
        )
    ldpa = {int(d): float(correct[d] / total[d]) for d in present}
    return BracketPredictionAccuracy(
        ldpa=ldpa,
        wcpa=min(ldpa.values()),
        mean_ldpa=float(np.mean(list(ldpa.values()))),
        pooled=float(correct.sum() / total.sum()),
        counts={int(d): int(total[d]) for d in present},
    )


def bracket_prediction_accuracy(
    probabilities, close_targets, distances, *, k, threshold=0.8
):
    """LDPA, WCPA, mean LDPA and pooled accuracy on arrays.

    Args:
        probabilities: `(N, T, V)` next-token probabilities.
        close_targets, distances: from `training.data.dyck_strings.DyckArrays` (or
            `annotate_targets`).
        k: number of bracket types.
        threshold: 0.8 in both reports.

    Returns:
        A `BracketPredictionAccuracy`.
    """
    # float64 where the backend has it (JAX: float32, not a truncation warning).
    probabilities = np.asarray(probabilities, dtype=backends.widest_float())
    distances = np.asarray(distances)
    num_distances = int(distances.max(initial=0)) + 1
    correct, total = bracket_prediction_counts(
        probabilities,
        np.asarray(close_targets),
        distances,
        k=k,
        threshold=threshold,
        num_distances=num_distances,
    )
    return summarize_bracket_counts(
        keras.ops.convert_to_numpy(correct), keras.ops.convert_to_numpy(total)
    )


@dataclasses.dataclass
class RecognitionAccuracy:
    """Overall accuracy and `{(low, high): (accuracy, count)}` per length bin."""

    overall: float
    per_bin: dict


def recognition_accuracy(scores, labels, lengths=None, bin_edges=None, threshold=0.5):
    """String recognition accuracy, overall and per length bin.

    Args:
        scores: `(N,)` per-string scores, or `(N, T)` per-step scores read at
            position `lengths[i]` (the last step, see
            `training.data.recognition_sets`).
        labels: `(N,)` 0/1 string labels.
        lengths: `(N,)` string lengths; needed for per-step scores or bins.
        bin_edges: increasing edges; bin i holds `edges[i] < length <=
            edges[i + 1]` (the paper's `20 < T <= 70` style).
        threshold: a score >= threshold means "accepted".
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels).astype(np.int64)
    if scores.ndim == 2:
        if lengths is None:
            raise ValueError(
                "per-step scores (N, T) need lengths to find the last step"
            )
        scores = scores[np.arange(len(scores)), np.asarray(lengths)]
    if scores.shape != labels.shape or scores.ndim != 1:
        raise ValueError(
            f"scores {scores.shape} and labels {labels.shape} must be equal (N,) shapes"
        )
    correct = (scores >= threshold).astype(np.int64) == labels
    return _accuracy_by_length(correct, lengths, bin_edges)


def _accuracy_by_length(correct, lengths, bin_edges):
    """`RecognitionAccuracy` of per-string booleans `correct`."""
    per_bin = {}
    if bin_edges is not None:
        if lengths is None:
            raise ValueError("bin_edges need lengths")
        lengths = np.asarray(lengths)
        for low, high in zip(bin_edges[:-1], bin_edges[1:], strict=True):
            inside = (lengths > low) & (lengths <= high)
            count = int(inside.sum())
            accuracy = float(correct[inside].mean()) if count else float("nan")
            per_bin[(low, high)] = (accuracy, count)
    return RecognitionAccuracy(overall=float(correct.mean()), per_bin=per_bin)


def strict_recognition_accuracy(
    accept,
    prefix_labels,
    lengths,
    *,
    labels=None,
    next_symbol=None,
    legal_next=None,
    bin_edges=None,
    threshold=0.5,
):
    """All-steps recognition accuracy: a string counts only if every step is right.

    The sequence-level criterion of the works Mali et al. (2020) follow
    (Gers & Schmidhuber 2001; Suzgun et al. 2019): at every unpadded
    position t = 0 .. length (after START and t symbols) the accept score is
    on the right side of `threshold` for the causal target, whether the
    prefix read so far is a complete string of the language
    (`RecognitionArrays.prefix_labels`); and, when `next_symbol` is given,
    on positive strings the arg-max next symbol is one that can legally
    follow the prefix (`RecognitionArrays.legal_next`). END is legal exactly
    where the prefix is complete, so at a positive string's last step END
    is right and so is any symbol that continues it (an open bracket): a
    causal model cannot know the string ends there. Negatives are not
    checked on `next_symbol`: after their first error no symbol is legal.
    On a balanced set a constant answer scores 0.5 at the last step alone;
    here a constant "accept" scores 0, and so does a constant "reject" on
    Dyck languages (their empty prefix is complete), though not on
    palindromes (it is right on every negative without a palindromic prefix).

    Args:
        accept: `(N, T)` per-step accept scores.
        prefix_labels: `(N, T)` 0/1 membership of each prefix.
        lengths: `(N,)` string lengths; positions 0 .. lengths[i] count.
        labels: `(N,)` 0/1 string labels; needed with `next_symbol`.
        next_symbol: optional `(N, T, V)` next-symbol scores (probabilities
            or logits: only the arg-max is used).
        legal_next: `(N, T, V)` bool legal-next masks; needed with
            `next_symbol`.
        bin_edges: as in `recognition_accuracy`.
        threshold: an accept score >= threshold means "accepted".

    Returns:
        A `RecognitionAccuracy`.
    """
    accept = np.asarray(accept, dtype=np.float64)
    targets = np.asarray(prefix_labels)
    lengths = np.asarray(lengths)
    if accept.ndim != 2 or accept.shape != targets.shape:
        raise ValueError(
            f"accept {accept.shape} and prefix_labels {targets.shape} must be "
            "equal (N, T) shapes"
        )
    if lengths.shape != (len(accept),) or lengths.max(initial=0) >= accept.shape[1]:
        raise ValueError(
            f"lengths {lengths.shape} must be (N,) = ({len(accept)},) with every "
            f"length below T = {accept.shape[1]}"
        )
    counted = np.arange(accept.shape[1])[None, :] <= lengths[:, None]  # (N, T)
    right = (accept >= threshold) == (targets >= 0.5)
    if next_symbol is not None:
        if labels is None or legal_next is None:
            raise ValueError("next_symbol needs labels and legal_next")
        next_symbol = np.asarray(next_symbol)
        legal_next = np.asarray(legal_next, dtype=bool)
        if next_symbol.shape != legal_next.shape or next_symbol.shape[:2] != (
            accept.shape
        ):
            raise ValueError(
                f"next_symbol {next_symbol.shape} and legal_next "
                f"{legal_next.shape} must be equal (N, T, V) shapes with (N, T) = "
                f"{accept.shape}"
            )
        chosen = np.argmax(next_symbol, axis=-1)[..., None]  # (N, T, 1)
        legal = np.take_along_axis(legal_next, chosen, axis=-1)[..., 0]
        positive = np.asarray(labels).astype(bool)[:, None]  # (N, 1)
        right &= legal | ~positive
    correct = np.all(right | ~counted, axis=1)  # (N,)
    return _accuracy_by_length(correct, lengths, bin_edges)


def recognition_metrics(arrays, accept, next_symbol):
    """A recognition split's metrics, as a run's metrics.json holds them.

    `arrays` is the split's `RecognitionArrays`, `accept` the `(N, T)`
    per-step accept scores and `next_symbol` the `(N, T, V)` next-symbol
    scores, of a model or of a rule (REPRODUCTION.md's rule rows). Returns
    `accuracy` (the accept output at the last step, `recognition_accuracy`),
    `strict_accept` (accept right at every step for the prefix's
    membership), `strict` (that and, on positive strings, a legal arg-max
    next symbol at every step: `strict_recognition_accuracy`),
    `strict_positives` and `next_symbol_positives` (`strict_readings`),
    `per_length` (20-symbol bins), `strings` and `positives`.
    """
    edges = list(range(0, int(arrays.lengths.max()) + 20, 20))
    final = recognition_accuracy(accept, arrays.labels, arrays.lengths, bin_edges=edges)
    readings = strict_readings(accept, next_symbol, arrays, edges)
    strict_accept, strict = readings["strict_accept"], readings["strict"]
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
        "strict_positives": readings["strict_positives"],
        "next_symbol_positives": readings["next_symbol_positives"],
        "per_length": per_length,
        "strings": len(arrays.labels),
        "positives": int((arrays.labels == 1).sum()),
    }


def strict_readings(accept, next_symbol, arrays, bin_edges=None):
    """Strict accuracy of a split's outputs, and its readings on positive strings.

    `strict_accept` and `strict` are `RecognitionAccuracy` (per
    `bin_edges`); `strict_positives` is `strict` over the positive strings
    alone and `next_symbol_positives` its next-symbol half alone (a legal
    arg-max next symbol at every step, the accept output not looked at:
    Suzgun et al.'s criterion, and the one a model trained on the string's
    label at every step, `task.step_labels = "string"`, can meet), each a
    fraction or None when the split has no positive string.

    Args:
        accept: `(N, T)` per-step accept scores.
        next_symbol: `(N, T, V)` next-symbol scores.
        arrays: the split's `RecognitionArrays`.
        bin_edges: as in `recognition_accuracy`.
    """
    strict_accept = strict_recognition_accuracy(
        accept, arrays.prefix_labels, arrays.lengths, bin_edges=bin_edges
    )
    strict = strict_recognition_accuracy(
        accept,
        arrays.prefix_labels,
        arrays.lengths,
        labels=arrays.labels,
        next_symbol=next_symbol,
        legal_next=arrays.legal_next,
        bin_edges=bin_edges,
    )
    readings = {"strict_accept": strict_accept, "strict": strict}
    # On positive strings only: the reading under which the paper's plain
    # RNNs score near 0 (REPRODUCTION.md, "The metric").
    positive = arrays.labels == 1
    for name, scores in (
        ("strict_positives", accept),
        ("next_symbol_positives", arrays.prefix_labels),  # a right accept
    ):
        readings[name] = None
        if positive.any():
            readings[name] = strict_recognition_accuracy(
                scores[positive],
                arrays.prefix_labels[positive],
                arrays.lengths[positive],
                labels=arrays.labels[positive],
                next_symbol=next_symbol[positive],
                legal_next=arrays.legal_next[positive],
            ).overall
    return readings


def accuracy_by_group(correct, groups):
    """`{group: (accuracy, count)}` of booleans `correct`, per value of `groups`.

    `correct` and `groups` have one shape (flattened here); the groups come
    in sorted order, as Python values (`int`, `str`).

    Example:
    >>> accuracy_by_group([True, False, True], [2, 2, 0])
    {0: (1.0, 1), 2: (0.5, 2)}
    """
    correct = np.asarray(correct, dtype=bool).ravel()
    groups = np.asarray(groups).ravel()
    if correct.shape != groups.shape:
        raise ValueError(
            f"correct {correct.shape} and groups {groups.shape} must be the same size."
        )
    found = {}
    for group in np.unique(groups):
        inside = groups == group
        found[group.item()] = (float(correct[inside].mean()), int(inside.sum()))
    return found


def cross_entropy(outputs, targets, mask=None, *, from_logits=False):
    """Mean cross-entropy per token in nats.

    Args:
        outputs: `(..., V)` probabilities (or logits with `from_logits`).
        targets: `(...)` int token ids.
        mask: optional `(...)` weights (0 on padding).
    """
    outputs = np.asarray(outputs, dtype=np.float64)
    targets = np.asarray(targets)
    if from_logits:
        shifted = outputs - outputs.max(axis=-1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    else:
        log_probs = np.log(np.clip(outputs, 1e-300, None))
    token_log_probs = np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]
    weights = np.ones_like(token_log_probs) if mask is None else np.asarray(mask, float)
    if weights.sum() <= 0:
        raise ValueError("cross_entropy needs at least one unmasked token")
    return float(-(token_log_probs * weights).sum() / weights.sum())


def perplexity(cross_entropy_nats):
    """exp of the per-token cross-entropy in nats; `inf` past float's range."""
    try:
        return math.exp(cross_entropy_nats)
    except OverflowError:  # above ~709 nats: a diverged model, not a bug
        return math.inf


def bits_per_character(cross_entropy_nats):
    """Per-character cross-entropy in nats converted to bits."""
    return cross_entropy_nats / math.log(2)


def bits_per_character_to_word_perplexity(bits_per_symbol, num_symbols, num_words):
    """Word perplexity from bits per symbol (Krause et al., 2016, eq. 23).

    bits/word = bits/symbol * symbols/file / words/file, and the perplexity is
    2 ** bits/word. Byte-level mLSTM on WikiText-2 test: 1.2649 bits/byte,
    1,256,449 bytes and 245,569 words give a perplexity of 88.8.
    """
    if num_symbols <= 0 or num_words <= 0:
        raise ValueError(
            "num_symbols and num_words must be > 0; received "
            f"{num_symbols} and {num_words}."
        )
    return 2.0 ** (bits_per_symbol * num_symbols / num_words)
