"""Targeted syntactic evaluation: does the model prefer the grammatical sentence?

Marvin & Linzen (2018); the second-order report, section 5 and Table 3. A
pair counts as correct when the grammatical sentence has the strictly higher
log-likelihood under the model.

Scoring. Each sentence is first written in the spelling conventions of the
run's training corpus (`zoo.text_conventions`: PTB's lower case without
punctuation, WikiText's split punctuation and `@-@`, ...; suites are written
with case and punctuation, `"Susan revealed herself."`), then tokenized with
the run's vocabulary (its level and whitespace or character split, as the
training text was) and read from the zero state (one sentence per row, so
the state is reset per sentence). When the vocabulary ends lines with
`<eos>`, the sentence is read after `<eos>` (as every line of the training
text is) and its log-likelihood includes the `<eos>` that ends it; without
one, the first token is not scored.

Out-of-vocabulary words become `<unk>` and are scored as `<unk>` (the
model's probability of the unknown-word class). A pair with an OOV word in
either sentence is scored and counted in `with_oov`; the accuracy over the
pairs without any OOV is reported beside. A pair is skipped (not scored)
when its two sentences are the same text once written in the conventions
(they differ only in what the conventions drop, as punctuation on PTB),
when they are the same ids after the `<unk>` mapping (the words that differ
are all unknown), when a sentence has no token to score, or when the
vocabulary has no `<unk>` and a word is unknown; the result counts each
reason (`skipped_because`). Fewer than half of the pairs scored says more
about the suite's words than about the model: `check_scored` refuses it.

`evaluate_syntax` scores a suite with a run directory's model and writes
`syntax.json`, `.csv` and `.png` (`python -m training.syntax`, which prints
`report`).
"""

import collections
from pathlib import Path

import numpy as np
from keras import ops

from training.analysis.run_inputs import check_kind
from training.core import plots
from training.core.compiled import compiled
from training.data.minimal_pairs import MARVIN_LINZEN_SUITE, load_suite
from training.data.tokenize import tokenize
from training.runs import run_files, runs
from zoo.text_conventions import AS_WRITTEN, write

_SEPARATOR = "\x00"  # ends each sentence in the one tokenization call
LOGITS_BUDGET = 1 << 24  # floats of logits per batch: 64 MB


def encode_sentences(vocabulary, sentences):
    """Ids of each sentence with the run's tokenization, and its OOV count.

    Returns:
        `(ids, oov)`: a list of int lists (None where a word is unknown and
        the vocabulary has no `<unk>`) and a list of OOV counts.
    """
    sentences = [" ".join(s.split("\n")) for s in sentences]
    if vocabulary.level == "byte":
        return [list(s.encode("utf-8")) for s in sentences], [0] * len(sentences)
    # One line per sentence: `tokenize` drops only the text's final newline.
    text = "\n".join(sentences) + "\n"
    tokens = tokenize(text, vocabulary.level, add_eos=True, eos_token=_SEPARATOR)
    index = {token: i for i, token in enumerate(vocabulary.tokens)}
    unk = vocabulary.unk_id
    ids, oov, current, unknown = [], [], [], 0
    for token in tokens.numpy().tolist():
        token = token.decode("utf-8")
        if token == _SEPARATOR:
            ids.append(None if unknown and unk is None else current)
            oov.append(unknown)
            current, unknown = [], 0
        elif token in index:
            current.append(index[token])
        else:
            current.append(unk)
            unknown += 1
    return ids, oov


def _sentence_scorer(model):
    """One compiled graph for the model and the log-likelihood sums.

    `reduce_retracing` lets one trace serve every batch shape on TensorFlow
    (JAX compiles each shape); calling the model eagerly instead ran the
    recurrent loop step by step in Python.
    """

    def score(inputs, targets, mask):
        logits = model(inputs, training=False)  # [rows, time, vocab]
        picked = ops.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
        log_probs = picked - ops.logsumexp(logits, axis=-1)  # [rows, time]
        return ops.sum(log_probs * mask, axis=-1)

    return compiled(model, score, jit_compile=False, reduce_retracing=True)


def score_sentences(model, vocabulary, sentences, batch_size=256):
    """The log-likelihood in nats of each sentence, and its OOV count.

    Returns:
        `(log_likelihoods, oov)`: NumPy arrays; a sentence that cannot be
        scored (see the module docstring) has NaN.
    """
    ids, oov = encode_sentences(vocabulary, sentences)
    eos = vocabulary.eos_id
    sequences = [
        None
        if s is None
        else ([eos] if eos is not None else []) + s + ([eos] if eos is not None else [])
        for s in ids
    ]
    scores = np.full(len(sentences), np.nan)
    order = sorted(
        (i for i, s in enumerate(sequences) if s is not None and len(s) >= 2),
        key=lambda i: len(sequences[i]),
    )
    vocab_size = len(vocabulary)
    score = _sentence_scorer(model)
    start = 0
    while start < len(order):
        longest = len(sequences[order[min(start + batch_size, len(order)) - 1]]) - 1
        rows = max(1, min(batch_size, LOGITS_BUDGET // (longest * vocab_size)))
        batch = order[start : start + rows]
        longest = max(len(sequences[i]) for i in batch) - 1
        inputs = np.zeros((len(batch), longest), "int32")
        targets = np.zeros((len(batch), longest), "int32")
        mask = np.zeros((len(batch), longest), "float32")
        for row, i in enumerate(batch):
            sequence = sequences[i]
            inputs[row, : len(sequence) - 1] = sequence[:-1]
            targets[row, : len(sequence) - 1] = sequence[1:]
            mask[row, : len(sequence) - 1] = 1.0
        scores[batch] = ops.convert_to_numpy(score(inputs, targets, mask))
        start += len(batch)
    return scores, np.asarray(oov)


def _summary(correct, scored, with_oov, correct_clean, clean, skipped):
    return {
        "accuracy": correct / scored if scored else None,
        "pairs": scored + skipped,
        "scored": scored,
        "skipped": skipped,
        "with_oov": with_oov,
        "accuracy_without_oov": correct_clean / clean if clean else None,
        "without_oov": clean,
    }


def pooled_suite(suite):
    """The test set with its animacy split undone: `npi_across_anim (...)` and
    `npi_across_inanim (...)` are both `npi_across (...)`, the rows of Marvin
    & Linzen's tables and of the second-order report's Table 3."""
    name, bracket, contrast = suite.partition(" (")
    for ending in ("_anim", "_inanim"):
        if name.endswith(ending):
            return name.removesuffix(ending) + bracket + contrast
    return suite


def evaluate_pairs(model, vocabulary, pairs, batch_size=256, conventions=None):
    """Accuracy on `pairs` (`training.data.minimal_pairs.MinimalPair`s).

    Both sentences of every pair are written in `conventions` (a name of
    `zoo.text_conventions.CONVENTIONS`; default: the vocabulary's, or
    the text as written when it names none) before they are tokenized.

    Returns:
        A dict with `"overall"`, `"categories"`, `"suites"`, `"pooled"` and
        `"conditions"`, each a summary (`accuracy`, `pairs`, `scored`,
        `skipped`, `with_oov`, `accuracy_without_oov`, `without_oov`); the
        keys of `"suites"` are `suite` or `suite (contrast)`, those of
        `"pooled"` the suites split by animacy with the split undone
        (`pooled_suite`), those of `"conditions"` add `: condition`;
        `"conventions"` names the conventions used.
    """
    if not pairs:
        raise ValueError("No minimal pairs to score; expected at least one.")
    if conventions is None:
        conventions = vocabulary.conventions or AS_WRITTEN[vocabulary.level]
    texts = sorted({p.good for p in pairs} | {p.bad for p in pairs})
    written = dict(zip(texts, write(texts, conventions), strict=True))
    sentences = sorted(set(written.values()))
    position = {s: i for i, s in enumerate(sentences)}
    scores, oov = score_sentences(model, vocabulary, sentences, batch_size)
    ids, _ = encode_sentences(vocabulary, sentences)
    counts = collections.defaultdict(lambda: np.zeros(6, "int64"))
    skipped_because = dict.fromkeys(SKIP_REASONS, 0)
    for pair in pairs:
        good, bad = position[written[pair.good]], position[written[pair.bad]]
        suite = f"{pair.suite} ({pair.contrast})" if pair.contrast else pair.suite
        keys = ("overall", f"category:{pair.category}", f"suite:{suite}")
        keys += (f"condition:{suite}: {pair.condition}",)
        pooled = pooled_suite(suite)
        if pooled != suite:
            keys += (f"pooled:{pooled}",)
        skipped = _skip_reason(
            good == bad, ids[good], ids[bad], scores[good], scores[bad]
        )
        if skipped:
            skipped_because[skipped] += 1
            row = (0, 0, 0, 0, 0, 1)
        else:
            correct = int(scores[good] > scores[bad])
            has_oov = int(oov[good] > 0 or oov[bad] > 0)
            row = (correct, 1, has_oov, correct * (1 - has_oov), 1 - has_oov, 0)
        for key in keys:
            counts[key] += row
    result = {
        "conventions": conventions,
        "overall": _summary(*counts.pop("overall").tolist()),
    }
    for section, prefix in (
        ("categories", "category:"),
        ("suites", "suite:"),
        ("pooled", "pooled:"),
        ("conditions", "condition:"),
    ):
        result[section] = {
            key[len(prefix) :]: _summary(*value.tolist())
            for key, value in counts.items()
            if key.startswith(prefix)
        }
    result["sentences"] = len(sentences)
    result["sentences_with_oov"] = int((oov > 0).sum())
    result["skipped_because"] = skipped_because
    return result


SKIP_REASONS = (
    "a word the vocabulary lacks, and it has no <unk>",
    "a sentence with no token to score",
    "the same text once written in the conventions",
    "the words that tell them apart are all outside the vocabulary",
)


def _skip_reason(same_text, good_ids, bad_ids, good_score, bad_score):
    """Why a pair cannot be scored (one of `SKIP_REASONS`), or None."""
    if good_ids is None or bad_ids is None:
        return SKIP_REASONS[0]
    if same_text:
        return SKIP_REASONS[2]
    if np.isnan(good_score) or np.isnan(bad_score):
        return SKIP_REASONS[1]
    if good_ids == bad_ids:
        return SKIP_REASONS[3]
    return None


def skip_reasons(result):
    """`"COUNT: REASON; ..."` for each reason `result` skipped pairs for."""
    return "; ".join(
        f"{count:,}: {reason}"
        for reason, count in result["skipped_because"].items()
        if count
    )


def check_scored(result, vocabulary):
    """Raises a one-line `ValueError` unless at least half of the pairs were scored.

    `result` is `evaluate_pairs`'s; the message counts each reason for
    skipping and names the vocabulary's level and the conventions the
    suite's text was written in.
    """
    overall = result["overall"]
    if 2 * overall["scored"] >= overall["pairs"]:
        return
    raise ValueError(
        f"Only {overall['scored']:,} of {overall['pairs']:,} minimal pairs can be "
        f"scored with this run's {vocabulary.level}-level vocabulary in "
        f"{result['conventions']} conventions (skipped {skip_reasons(result)}); "
        "expected at least half: the words that tell a pair's sentences apart "
        "must be in the vocabulary."
    )


def table_rows(result):
    """CSV rows: level (category, suite, condition), name and the summary."""
    rows = []
    for level, section in (
        ("category", "categories"),
        ("suite", "suites"),
        ("pooled", "pooled"),
        ("condition", "conditions"),
    ):
        for name, summary in result[section].items():
            rows.append({"level": level, "name": name, **summary})
    return rows


def plot(result, path, title="Targeted syntactic evaluation"):
    """Accuracy per suite as horizontal bars, chance (0.5) marked."""
    suites = list(result["suites"].items())
    fig, ax = plots.figure(
        title,
        "accuracy (share of pairs, grammatical more likely)",
        None,
        height=1.2 + 0.28 * len(suites),
    )
    values = [s["accuracy"] if s["accuracy"] is not None else 0.0 for _, s in suites]
    ax.barh(range(len(suites)), values, color="C0", label="accuracy (scored pairs)")
    ax.set_yticks(range(len(suites)))
    ax.set_yticklabels([f"{name} ({s['scored']})" for name, s in suites], fontsize=7)
    ax.invert_yaxis()
    ax.axvline(0.5, color="C3", linestyle="--", label="chance")
    ax.set_xlim(0, 1)
    ax.set_ylabel("suite (pairs scored)")
    ax.legend(loc="lower right", fontsize=8)
    return plots.save(fig, path)


def evaluate_syntax(
    run_dir, suite=MARVIN_LINZEN_SUITE, data_dir=None, out=None, every=1
):
    """Scores `suite` (every `every`-th pair) with the run's model.

    Writes and returns the results, once every check has passed (the
    options, the run, the suite, and that at least half of the pairs can be
    scored: `training.analysis.check_scored`).
    """
    if every < 1:
        raise ValueError(f"--every must be at least 1; received {every!r}.")
    name = MARVIN_LINZEN_SUITE if suite == MARVIN_LINZEN_SUITE else Path(suite).stem
    if not out and runs.read_only(run_dir):
        raise ValueError(
            f"{run_dir} is a preset, which is read-only; expected --out DIR for "
            "syntax.json, syntax.csv and syntax.png."
        )
    out = plots.check_out_dir(out if out else Path(run_dir) / f"syntax-{name}")
    claimed = run_files.in_run_directory(out)  # syntax's own folder in the run's
    if claimed:
        run_files.check_claim(out, "python -m training.syntax")
    run = runs.load_run(run_dir)
    check_kind(run.recipe, ("language_model",), "Syntactic evaluation", run_dir)
    pairs = load_suite(suite, data_dir)[::every]
    result = evaluate_pairs(run.model, run.vocabulary, pairs)
    check_scored(result, run.vocabulary)
    result["suite"] = suite
    result["every"] = every
    if claimed:
        run_files.claim(out, "python -m training.syntax")
    plots.make_out_dir(out)
    runs.write_json(out / "syntax.json", result)
    plots.write_table(out / "syntax.csv", table_rows(result))
    plot(result, out / "syntax.png", title=f"Syntactic evaluation: {name}")
    return result, out


def report(result):
    """What `python -m training.syntax` prints: the pairs scored, skipped and
    with an OOV word, then a table of the accuracies of each category, test
    set and condition."""
    overall = result["overall"]
    reasons = skip_reasons(result)
    lines = [
        f"conventions {result['conventions']}: {overall['scored']:,} of "
        f"{overall['pairs']:,} pairs scored "
        f"({overall['scored'] / overall['pairs']:.1%}), {overall['with_oov']:,} "
        f"of them with an OOV word (scored as <unk>); {overall['skipped']:,} "
        "skipped" + (f" ({reasons})" if reasons else "")
    ]
    sections = [("overall", result["overall"])]
    sections += [(f"category {n}", s) for n, s in result["categories"].items()]
    sections += list(result["suites"].items())
    sections += [(f"{name}, animacy pooled", s) for name, s in result["pooled"].items()]
    width = max(len(name) for name, _ in sections) + 1  # names are never cut
    lines += [
        f"{'':{width}}"
        f"{'accuracy':>9}{'scored':>8}{'skipped':>8}{'OOV':>7}{'no-OOV acc':>11}"
    ]
    for name, summary in sections:
        accuracy = summary["accuracy"]
        clean = summary["accuracy_without_oov"]
        lines.append(
            f"{name:{width}}"
            f"{'-' if accuracy is None else f'{accuracy:.3f}':>9}"
            f"{summary['scored']:>8}{summary['skipped']:>8}{summary['with_oov']:>7}"
            f"{'-' if clean is None else f'{clean:.3f}':>11}"
        )
    return "\n".join(lines)
