"""Rule rows of the recognition tables: what a predictor with no training scores.

A recognition table (its rows' recipes are of kind "recognition") gets, per
language of its rows, a row for each rule below, computed from the data,
not trained, on the splits of seed 0 (`RULE_SEEDS`: the data of every row's
seed 0; a rule's score moves with the seed's splits by a few points, as each
split draws its share of the paper's hard negatives: REPRODUCTION.md). Seed
0 only, as every rule costs a split's generation and framing (about 10 s of
CPU a language), and `--report` computes them for every table it writes.
Each rule answers at every step, as a model's `accept` output does, from the
prefix read so far, and always names the first symbol of the alphabet as
the next symbol (an open bracket: legal after every prefix of a Dyck
string; `a` on palindromes); the rules' metrics are the models'
(`training.core.metrics.recognition_metrics`), on the same splits, the hard ones
included (`training.data.one_edit`).

- majority class: the training split's more common string label (reject on
  a tie, the label of most prefixes), everywhere;
- counting (Dyck): accept when each bracket type was opened and closed
  equally often, order ignored;
- centre marker (palindromes): accept when exactly one centre marker c was
  read.
"""

import functools

import numpy as np

from training.core import metrics
from training.data import languages, one_edit, recognition_sets
from training.reproduction import table_schema

RULE_SEEDS = (0,)
RULES = {
    "majority class": (
        "the training split's more common string label at every step (reject "
        "on a tie, the label of most prefixes)"
    ),
    "counting": (
        "accept when each bracket type was opened and closed equally often, "
        "order ignored"
    ),
    "centre marker": "accept when exactly one centre marker c was read",
}


def rules_of(language):
    """The rules that apply to `language`, in `RULES` order."""
    own = "centre marker" if languages.bracket_types(language) is None else "counting"
    return ["majority class", own]


def rule_outputs(rule, arrays, language, majority=0):
    """`(accept, next_symbol)` of `rule` on a split's `RecognitionArrays`.

    `accept` is `(N, T)` (1 accepts the prefix read at that step), and
    `next_symbol` `(N, T, V)`, one-hot on the alphabet's first symbol;
    `majority` is the label the majority class answers.
    """
    inputs = arrays.inputs  # (N, T): START, then the symbols, then PAD
    if rule == "majority class":
        accept = np.full(inputs.shape, float(majority))
    elif rule == "counting":
        n = languages.bracket_types(language)
        first = languages.alphabet(language)[0]
        balanced = np.ones(inputs.shape, dtype=bool)
        for kind in range(n):
            opened = np.cumsum(inputs == first + kind, axis=1)  # (N, T)
            closed = np.cumsum(inputs == first + n + kind, axis=1)
            balanced &= opened == closed
        accept = balanced.astype(float)
    elif rule == "centre marker":
        markers = np.cumsum(inputs == languages.PALINDROME_MARKER, axis=1)
        accept = (markers == 1).astype(float)
    else:
        raise ValueError(f"rule must be one of {', '.join(RULES)}; received {rule!r}")
    next_symbol = np.zeros((*inputs.shape, languages.vocabulary_size(language)))
    next_symbol[..., languages.alphabet(language)[0]] = 1.0  # (N, T, V)
    return accept, next_symbol


@functools.lru_cache(maxsize=16)
def rule_metrics(language, split_scale, hard_negatives, seed):
    """`{rule: {split: metrics}}` on the splits of one seed (cached)."""
    splits = recognition_sets.mali_splits(
        language, seed=seed, scale=split_scale, hard_negatives=hard_negatives
    )
    splits.update(one_edit.hard_splits(language, seed=seed, scale=split_scale))
    majority = int(splits["train"].labels.mean() > 0.5)
    found = {rule: {} for rule in rules_of(language)}
    for name, split in splits.items():
        if name == "valid":
            continue  # no table shows it
        arrays = recognition_sets.frame(split, language)
        for rule in found:
            accept, next_symbol = rule_outputs(rule, arrays, language, majority)
            found[rule][name] = metrics.recognition_metrics(arrays, accept, next_symbol)
    return found


def recognition_data(table):
    """`{row name: (language, split_scale, hard_negatives)}` of its recognition rows."""
    found = {}
    for row in table.rows:
        recipe = table_schema.make_run(table, row, 0, "unused").recipe
        task = recipe.task
        if task.kind == "recognition":
            found[row.name] = (task.language, task.split_scale, task.hard_negatives)
    return found


def rule_results(table, seeds=RULE_SEEDS):
    """The rule rows of `table` as results `table_summary.summarize` reads.

    One per rule, language (and data setting) of the table's recognition
    rows and seed: `row` ("rule: counting", or "rule (D6): counting" where
    the table has several), `seed`, `seconds` (None), `metrics` (as a run's
    metrics.json), `rule` (what it answers); none for a table without
    recognition rows.
    """
    settings = list(dict.fromkeys(recognition_data(table).values()))
    results = []
    for setting in settings:
        language = setting[0]
        where = f" ({language})" if len(settings) > 1 else ""
        if len({s[0] for s in settings}) < len(settings):
            where = f" ({', '.join(map(str, setting))})"
        for rule in rules_of(language):
            for seed in seeds:
                results.append(
                    {
                        "row": f"rule{where}: {rule}",
                        "seed": seed,
                        "seconds": None,  # computed, not trained
                        "metrics": rule_metrics(*setting, seed)[rule],
                        "rule": RULES[rule],
                        "setting": setting,
                    }
                )
    return results


# A seed "learned the stack" when its strict accuracy on the positive test
# strings is at least LEARNED_AT and its strict accuracy on the hard test
# (negatives one edit from a positive) is above every rule row's of its
# language: the counting rule is right on every positive Dyck string, so
# strict on positives alone is a bar a rule passes (REPRODUCTION.md).
LEARNED_METRIC = "test.strict_positives"
LEARNED_AT = 0.9
HARD_METRIC = "hard.strict"
# Shown beside them: the next-symbol half of strict on positives, which a
# model trained on the string's label (`task.step_labels = "string"`) can meet.
MIRROR_METRIC = "test.next_symbol_positives"


def rule_bar(rules):
    """The best `HARD_METRIC` of the rule results `rules`, or None if none has it."""
    values = [table_schema.metric_value(r["metrics"], HARD_METRIC) for r in rules]
    values = [value for value in values if value is not None]
    return max(values) if values else None


def learned(results, bar):
    """The learned-the-stack reading of one row's results.

    Args:
        results: the row's results (each with its `metrics`).
        bar: the best rule's `HARD_METRIC` for the row's language
            (`rule_bar`); a seed must be above it. None: not known, and no
            seed is counted.

    Returns:
        `{learned, n, values, hard, mirror, bar}`: the seeds with
        `LEARNED_METRIC` >= `LEARNED_AT` and `HARD_METRIC` > `bar`, the
        seeds with both measured, and each result's `LEARNED_METRIC`,
        `HARD_METRIC` and `MIRROR_METRIC` (None where its record lacks it).
    """

    def read(key):
        return [table_schema.metric_value(r["metrics"], key) for r in results]

    values, hard = read(LEARNED_METRIC), read(HARD_METRIC)
    measured = [
        (value, on_hard)
        for value, on_hard in zip(values, hard, strict=True)
        if value is not None and on_hard is not None and bar is not None
    ]
    return {
        "learned": sum(v >= LEARNED_AT and h > bar for v, h in measured),
        "n": len(measured),
        "values": values,
        "hard": hard,
        "mirror": read(MIRROR_METRIC),
        "bar": bar,
    }


def _lengths(paper_split):
    _, low, high = recognition_sets.MALI_SPLITS["small"][paper_split]
    return f"{low}-{high}"


def markdown_lines(table, summary):
    """The learned-the-stack table and the legend of the rule rows and hard
    tests, as Markdown lines; none for a table without recognition rows."""
    rows = [row for row in summary["rows"] if row.get("learned")]
    if not rows:
        return []
    bars = sorted({row["learned"]["bar"] for row in rows} - {None})
    bars = ", ".join(f"{100 * bar:.1f}%" for bar in bars) or "–"
    lines = [
        f"**learned the stack**: a seed learned it when its strict accuracy on "
        f"the positive test strings (`{LEARNED_METRIC}`) is at least "
        f"{LEARNED_AT:.0%} and its strict accuracy on the hard test "
        f"(`{HARD_METRIC}`) is above every rule row's of its language (best "
        f"rule: {bars}), so no rule passes it; each seed's values in seed "
        f"order, and beside them the next-symbol half of strict on positives "
        f"(`{MIRROR_METRIC}`: the arg-max next symbol legal at every step of a "
        "positive string, which a model trained on the string's label can meet)",
        "",
        "| row | learned the stack | strict on positives, per seed (%) "
        "| hard test strict, per seed (%) | next symbol legal on positives, "
        "per seed (%) |",
        "|---|---|---|---|---|",
    ]

    def listed(values):
        shown = ", ".join("–" if v is None else f"{100 * v:.1f}" for v in values)
        return shown or "–"

    for row in rows:
        found = row["learned"]
        rate = f"{found['learned']} of {found['n']}" if found["n"] else "–"
        lines.append(
            f"| {row['name']} | {rate} | {listed(found['values'])} | "
            f"{listed(found['hard'])} | {listed(found['mirror'])} |"
        )
    lines.append("")
    rules = [row for row in summary["rows"] if row.get("rule")]
    if rules:
        names = [row["name"].rpartition(": ")[2] for row in rules]
        described = "; ".join(
            f"{rule}, {text}" for rule, text in RULES.items() if rule in names
        )
        lines += [
            "Rule rows: computed from the data, not trained, on the splits of "
            f"seed {', '.join(map(str, RULE_SEEDS))} "
            "(`training.reproduction.table_baselines`): "
            f"{described}. Each answers at every step from the prefix read and "
            "names the alphabet's first symbol as the next symbol, and is scored "
            "as the models are.",
            "",
        ]
    if any(row["name"].endswith(": counting") for row in rules):
        lines += [
            "On Dyck, strict on positives needs no stack: the counting rule is "
            "right at every step of every positive string (an open bracket is "
            "always a legal next symbol); the hard tests are where a count "
            "fails, which is why learned-the-stack asks for both.",
            "",
        ]
    if any(
        metric.key.split(".")[0] in one_edit.HARD_SPLITS for metric in table.metrics
    ):
        lines += [
            f"Hard tests (`hard`: lengths {_lengths('test')}, `hard_long`: "
            f"{_lengths('long_160')}): fresh "
            "strings, half positives, half negatives each one edit "
            "(substitution, insertion, deletion or adjacent swap) from a "
            "positive and rejected by the exact recogniser "
            "(`training.data.one_edit`). Runs recorded before these splits "
            "were evaluated show – there: their records keep no weights to "
            "evaluate again; a new run records them in its metrics.json.",
            "",
        ]
    return lines
