"""A reproduction table's summary: statistics over seeds, verdicts, Markdown.

`summarize` turns the finished runs' metrics of a `training.reproduction.table_schema`
table into mean, best, standard deviation (over seeds, with `ddof=1`) and
the claims' verdicts (`verdict`); `markdown` writes the summary as tables
with the paper's numbers beside ours.
"""

import collections
import math
import shlex
import warnings

import scipy.stats

from training.reproduction import table_baselines
from training.reproduction.table_schema import Row, result_value

# A claim's verdict (`verdict`; REPRODUCTION.md's introduction states the rule).
MIN_SEEDS = 3  # seeds on each side, at least, for any verdict
ALPHA = 0.05  # one-sided significance level


def _statistics(values, better):
    values = [value for value in values if value is not None]
    if not values:
        return {"n": 0}
    mean = sum(values) / len(values)
    spread = (  # one seed has no spread: None, shown as "–"
        math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
        if len(values) > 1
        else None
    )
    best = max(values) if better == "higher" else min(values)
    return {"n": len(values), "mean": mean, "best": best, "std": spread}


def _one_sided_p(better, worse, alternative):
    """Welch's one-sided p that `better` is `alternative` ("greater"/"less")."""
    if max(better) == min(better) and max(worse) == min(worse):
        # No spread on either side: the t statistic is +-inf (scipy warns of
        # the division); equal values are handled by the caller.
        greater = better[0] > worse[0]
        return 0.0 if greater == (alternative == "greater") else 1.0
    with warnings.catch_warnings():  # nearly equal values: a precision warning
        warnings.simplefilter("ignore", RuntimeWarning)
        result = scipy.stats.ttest_ind(
            better, worse, equal_var=False, alternative=alternative
        )
    return float(result.pvalue)


def _rank_p(better, worse, alternative):
    """The Mann-Whitney U test's one-sided p that `better` is `alternative`.

    Exact: the share of every split of the pooled seeds into the two sizes
    whose rank sum is as extreme as the observed one (ties at mid-ranks), so
    a few seeds get the p-value they can give and no normal approximation.
    The splits are counted by their rank sums (twice the mid-ranks are
    whole numbers), not listed: the same count, and so the same p, as
    `scipy.stats.mannwhitneyu` with `PermutationMethod(n_resamples=inf)`,
    which lists all C(n, k) of them (10 seeds a side: 184,756, each ranked
    in Python; tests/training/reproduction/table_summary_test.py checks the two agree).
    """
    pooled = [*better, *worse]
    doubled = [0] * len(pooled)  # twice each value's mid-rank (1-based)
    order = sorted(range(len(pooled)), key=pooled.__getitem__)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and pooled[order[end + 1]] == pooled[order[start]]:
            end += 1
        for position in range(start, end + 1):
            doubled[order[position]] = start + end + 2
        start = end + 1
    # sums[k][s]: how many k-subsets of the pooled seeds have doubled rank sum s
    sums = [collections.Counter() for _ in range(len(better) + 1)]
    sums[0][0] = 1
    for rank in doubled:
        for k in range(len(better), 0, -1):
            for total, count in sums[k - 1].items():
                sums[k][total + rank] += count
    observed = sum(doubled[: len(better)])
    if alternative == "greater":
        extreme = sum(c for total, c in sums[-1].items() if total >= observed)
    else:
        extreme = sum(c for total, c in sums[-1].items() if total <= observed)
    return extreme / math.comb(len(pooled), len(better))


def _p_text(p, inclusive=False):
    """`p` in two digits, never rounded across `ALPHA` (`inclusive`: p <= ALPHA
    counts, as for the exact rank test)."""
    if p < 0.001:
        return "p < 0.001"
    text = f"{p:.2g}"
    if p < ALPHA <= float(text):  # rounding must not hide significance
        return f"p = {p:.3g}" if inclusive else f"p < {ALPHA}"
    if p > ALPHA >= float(text):  # nor make it up
        return f"p = {p:.3g}"
    return f"p = {text}"


def _both_p(welch, rank):
    return f"Welch {_p_text(welch)}, Mann-Whitney {_p_text(rank, inclusive=True)}"


def p_values(claim):
    """A claim's two one-sided p-values as its verdict shows them (those of
    the opposite direction for a reversed claim), or "–" without them."""
    if claim["p"] is None:
        return "–"
    if claim["outcome"] == "reversed":
        return f"{_both_p(claim['p_opposite'], claim['rank_p_opposite'])} (opposite)"
    return _both_p(claim["p"], claim["rank_p"])


def verdict(better, worse, direction):
    """The verdict of the claim "`better` is better than `worse`".

    The rule (REPRODUCTION.md's introduction states it too): with at least
    `MIN_SEEDS` (3) seeds on each side, two one-sided tests of the claimed
    direction over the seeds' values: Welch's t-test
    (`scipy.stats.ttest_ind`, `equal_var=False`), which reads the means,
    and the Mann-Whitney U test (`scipy.stats.mannwhitneyu`, exact), which
    reads only the seeds' order and so is not moved by one seed far from
    the rest (a row whose seeds are bimodal, 0% or 95%, has a mean that no
    seed is near). "holds" only when both agree that the difference is
    beyond the seed spread: Welch p < `ALPHA` (0.05) and Mann-Whitney
    p <= `ALPHA` (an exact rank test's level-0.05 region is p <= 0.05; with
    3 seeds a side its smallest p is 1/20 = 0.05, every seed of one row
    beyond every seed of the other); "reversed" when both agree so on the
    opposite direction; otherwise "within seed spread" (also when one test
    alone would call it). Fewer seeds on a side: "no verdict" ("one seed:
    no verdict"). Both sides without any spread are told apart by their
    values (t is infinite), or are equal: within seed spread.

    Args:
        better: the claimed-better row's values, one per seed (None skipped).
        worse: the other row's values.
        direction: "higher" or "lower", which values are better.

    Returns:
        A dict: `outcome` ("holds", "reversed", "within seed spread",
        "no verdict" or "not measured"), `p` and `p_opposite` (Welch's
        one-sided p-values of the claimed and the opposite direction, None
        where they cannot be computed), `rank_p` and `rank_p_opposite` (the
        Mann-Whitney U test's), `n` (seeds on each side) and `verdict`, the
        line to print, with both tests' p-values.
    """
    better = [float(v) for v in better if v is not None]
    worse = [float(v) for v in worse if v is not None]
    n = [len(better), len(worse)]
    result = {
        "outcome": "not measured",
        "p": None,
        "p_opposite": None,
        "rank_p": None,
        "rank_p_opposite": None,
        "n": n,
    }
    if not min(n):
        return {**result, "verdict": "not measured"}
    if min(n) >= 2:
        claimed = "greater" if direction == "higher" else "less"
        opposite = "less" if claimed == "greater" else "greater"
        equal = set(better) == set(worse) and len(set(better)) == 1
        if not equal:
            result["p"] = _one_sided_p(better, worse, claimed)
            result["p_opposite"] = _one_sided_p(better, worse, opposite)
            result["rank_p"] = _rank_p(better, worse, claimed)
            result["rank_p_opposite"] = _rank_p(better, worse, opposite)
    p, p_opposite = result["p"], result["p_opposite"]
    rank_p, rank_p_opposite = result["rank_p"], result["rank_p_opposite"]
    if min(n) == 1:
        return {**result, "outcome": "no verdict", "verdict": "one seed: no verdict"}
    if min(n) < MIN_SEEDS:
        shown = "" if p is None else f" ({_both_p(p, rank_p)})"
        return {
            **result,
            "outcome": "no verdict",
            "verdict": f"too few seeds ({n[0]} and {n[1]}): no verdict{shown}",
        }
    if p is None:
        return {
            **result,
            "outcome": "within seed spread",
            "verdict": "within seed spread (every seed equal: no difference)",
        }
    if p < ALPHA and rank_p <= ALPHA:
        return {
            **result,
            "outcome": "holds",
            "verdict": f"holds ({_both_p(p, rank_p)})",
        }
    if p_opposite < ALPHA and rank_p_opposite <= ALPHA:
        return {
            **result,
            "outcome": "reversed",
            "verdict": (
                f"reversed ({_both_p(p_opposite, rank_p_opposite)} for the opposite)"
            ),
        }
    return {
        **result,
        "outcome": "within seed spread",
        "verdict": f"within seed spread ({_both_p(p, rank_p)})",
    }


def _missing(table, results, seeds):
    """`{row: [seed, ...]}` of the seeds `0 .. seeds - 1` with no result."""
    have = {(result["row"], result["seed"]) for result in results}
    missing = {}
    for row in table.rows:
        absent = [seed for seed in range(seeds) if (row.name, seed) not in have]
        if absent:
            missing[row.name] = absent
    return missing


def summarize(table, results, seeds=None, rules=()):
    """Aggregates finished runs.

    Args:
        table: the `Table`.
        results: a list of dicts with `row`, `seed`, `metrics` (the run's
            metrics.json), `seconds` and optionally `parameters`, `host`
            (the CPU it ran on), `history` and `history_lacks` (the
            quantities of its log.csv and the columns it lacks,
            `training.reproduction.records.read_record`).
        seeds: the seeds `0 .. seeds - 1` every row should have (default:
            the table's); those without a result are listed in `missing`.
        rules: the rule rows' results
            (`training.reproduction.table_baselines.rule_results`),
            summarized after the table's rows, in no claim.

    Returns:
        A dict with `rows` (every row of the table, in its order, then the
        rule rows (`rule` true): per metric the paper's values and ours:
        mean, best, std, n; seconds per run; parameters; `learned`, the
        learned-the-stack rate of a recognition row, `table_baselines.learned`),
        `claims` (each with both means and its `verdict`),
        `missing` (`{row: [seed, ...]}`), `hosts` (runs per machine) and
        `history_lacks` (`[{row, seed, lacks}]`: runs whose log.csv lacks a
        column a `history.` metric reads).
    """
    rows, values = [], {}
    order = [row.name for row in table.rows]
    recognition = table_baselines.recognition_data(table)
    described = {result["row"]: result["rule"] for result in rules}
    settings = {result["row"]: result["setting"] for result in rules}
    settings.update(recognition)
    bars = {
        setting: table_baselines.rule_bar(
            [result for result in rules if result["setting"] == setting]
        )
        for setting in set(settings.values())
    }
    rule_rows = [Row(name, "", "", (), {}, note) for name, note in described.items()]
    for row in [*table.rows, *rule_rows]:
        mine = sorted(
            (result for result in [*results, *rules] if result["row"] == row.name),
            key=lambda result: result["seed"],
        )
        summary = {
            "name": row.name,
            "recipe": row.recipe,
            "scale": row.scale,
            "overrides": list(row.overrides),
            "note": row.note,
            "seconds": _statistics([r["seconds"] for r in mine], "lower").get("mean"),
            "parameters": next(
                (r["parameters"] for r in mine if r.get("parameters") is not None),
                None,
            ),
            "metrics": {},
            "rule": row.name in described,
            "learned": table_baselines.learned(mine, bars[settings[row.name]])
            if row.name in settings
            else None,
        }
        for metric in table.metrics:
            found = [result_value(r, metric.key) for r in mine]
            found = [None if v is None else v * metric.factor for v in found]
            values[row.name, metric.key] = found
            summary["metrics"][metric.key] = {
                **_statistics(found, metric.better),
                "paper": row.paper.get(metric.key, {}),
            }
        rows.append(summary)
    by_name = {row["name"]: row for row in rows}
    claims = []
    for claim in table.claims:
        key = claim.metric
        direction = next(m.better for m in table.metrics if m.key == key)
        claims.append(
            {
                "text": claim.text,
                "metric": key,
                "better": claim.better,
                "worse": claim.worse,
                "better_mean": by_name[claim.better]["metrics"][key].get("mean"),
                "worse_mean": by_name[claim.worse]["metrics"][key].get("mean"),
                **verdict(
                    values[claim.better, key], values[claim.worse, key], direction
                ),
            }
        )
    hosts = collections.Counter(result.get("host") or "unknown" for result in results)
    lacking = [
        {"row": r["row"], "seed": r["seed"], "lacks": r["history_lacks"]}
        for r in sorted(results, key=lambda r: (order.index(r["row"]), r["seed"]))
        if r.get("history_lacks")
    ]
    return {
        "table": table.name,
        "title": table.title,
        "rows": rows,
        "claims": claims,
        "missing": _missing(table, results, table.seeds if seeds is None else seeds),
        "hosts": [
            {"host": host, "runs": count}
            for host, count in sorted(
                hosts.items(), key=lambda item: (-item[1], item[0])
            )
        ],
        "history_lacks": lacking,
    }


def _number(value):
    if value is None:
        return "–"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _paper(paper):
    if not paper:
        return "–"
    if set(paper) == {"mean"}:
        return _number(paper["mean"])
    return f"{_number(paper.get('mean'))} / {_number(paper.get('best'))}"


def command_line(row):
    """The command (seed aside) that trains one run of `row`."""
    parts = [
        "python -m training.train",
        shlex.quote(row["recipe"]),
        *(shlex.quote(text) for text in row["overrides"]),
    ]
    if row["scale"] != "small":
        parts.append(f"--scale {row['scale']}")
    return " ".join(parts)


def _seed_ranges(seeds):
    """[0, 1, 2, 4] -> "0-2, 4"."""
    parts, start = [], None
    for index, seed in enumerate(seeds):
        if start is None:
            start = seed
        if index + 1 == len(seeds) or seeds[index + 1] != seed + 1:
            parts.append(str(start) if start == seed else f"{start}-{seed}")
            start = None
    return ", ".join(parts)


def _lacking_lines(lacking):
    """A line per missing log column: which runs lack it, so "–" is explained."""
    by_column = collections.defaultdict(list)
    for entry in lacking:
        for column in entry["lacks"]:
            by_column[column].append(f"{entry['row']} seed {entry['seed']}")
    lines = []
    for column, names in by_column.items():
        what = (
            "Records without a log.csv"
            if column == "log.csv"
            else f"Records with no per-epoch {column} in their log.csv (trained "
            "before it was logged)"
        )
        lines += [
            f"{what}: {', '.join(names)}; the `history.` metrics that read it "
            "are not measured there (–) until those runs are trained again.",
            "",
        ]
    return lines


def markdown(table, summary):
    """The summary as Markdown: one table per metric, then the claims."""
    lines = [f"### {table.title}", ""]
    if table.source:
        lines += [f"Paper's numbers: {table.source}", ""]
    if table.notes:
        lines += [f"Notes: {table.notes}", ""]
    for metric in table.metrics:
        lines += [
            f"**{metric.label}** ({metric.better} is better; ours: mean over "
            "seeds, best, sample standard deviation, seeds)",
            "",
            "| row | paper (mean / best) | ours mean | best | std | seeds "
            "| parameters | s/run |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in summary["rows"]:
            values = row["metrics"][metric.key]
            parameters = (
                f"{row['parameters']:,}" if row["parameters"] is not None else "–"
            )
            seconds = f"{row['seconds']:.0f}" if row["seconds"] is not None else "–"
            lines.append(
                f"| {row['name']} | {_paper(values['paper'])} "
                f"| {_number(values.get('mean'))} | {_number(values.get('best'))} "
                f"| {_number(values.get('std'))} | {values['n']} | {parameters} "
                f"| {seconds} |"
            )
        lines.append("")
    lines += table_baselines.markdown_lines(table, summary)
    if summary["claims"]:
        lines += [
            "| claim | ours (means) | seeds | verdict |",
            "|---|---|---|---|",
        ]
        for claim in summary["claims"]:
            lines.append(
                f"| {claim['text']} | {_number(claim['better_mean'])} vs "
                f"{_number(claim['worse_mean'])} | {claim['n'][0]} vs "
                f"{claim['n'][1]} | {claim['verdict']} |"
            )
        lines += [
            "",
            "Verdicts: the rule in REPRODUCTION.md's introduction "
            "(`training.reproduction.table_summary.verdict`).",
            "",
        ]
    lines += _lacking_lines(summary.get("history_lacks", []))
    if summary["hosts"]:
        machines = "; ".join(
            f"{entry['runs']} on {entry['host']}" for entry in summary["hosts"]
        )
        lines += [f"Runs: {machines}.", ""]
    missing = summary["missing"]
    if (
        missing
        and len(set(map(tuple, missing.values()))) == 1
        and len(missing) == len(summary["rows"])
    ):
        seeds = _seed_ranges(next(iter(missing.values())))
        lines += [f"Not run yet: every row (seed {seeds}).", ""]
    elif missing:
        text = "; ".join(
            f"{name} (seed {_seed_ranges(seeds)})" for name, seeds in missing.items()
        )
        lines += [f"Not run yet: {text}.", ""]
    lines += ["Commands (add `train.seed=N` for seed N):", ""]
    for row in summary["rows"]:
        if row.get("rule"):
            continue  # computed, not trained: table_baselines.markdown_lines
        note = f" — {row['note']}" if row["note"] else ""
        lines.append(f"- {row['name']}: `{command_line(row)}`{note}")
    lines.append("")
    return "\n".join(lines)
