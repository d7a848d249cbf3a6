import itertools
import math

import numpy as np
import pytest
import scipy.stats

from training.reproduction import table_schema, table_summary


def test_summarize_computes_mean_best_std_and_claims(tiny_table):
    table = table_schema.load_table(str(tiny_table))
    results = [
        {
            "row": "small",
            "seed": 0,
            "seconds": 2.0,
            "metrics": {"test": {"wcpa": 0.5, "cross_entropy": 1.0}},
        },
        {
            "row": "small",
            "seed": 1,
            "seconds": 4.0,
            "metrics": {"test": {"wcpa": 0.7, "cross_entropy": 0.8}},
        },
        {
            "row": "wide",
            "seed": 0,
            "seconds": 3.0,
            "parameters": 10,
            "metrics": {"test": {"wcpa": 1.0, "cross_entropy": 0.5}},
        },
    ]
    summary = table_summary.summarize(table, results)
    small, wide = summary["rows"]
    wcpa = small["metrics"]["test.wcpa"]
    assert wcpa["n"] == 2
    assert wcpa["mean"] == pytest.approx(60.0)
    assert wcpa["best"] == pytest.approx(70.0)
    assert wcpa["std"] == pytest.approx(14.142135, rel=1e-6)  # ddof = 1
    assert wcpa["paper"] == {"mean": 50.0, "best": 60.0}
    entropy = small["metrics"]["test.cross_entropy"]
    assert entropy["best"] == pytest.approx(0.8)  # lower is better
    assert small["seconds"] == pytest.approx(3.0)
    assert wide["parameters"] == 10
    assert wide["metrics"]["test.wcpa"]["std"] is None  # one seed has no spread
    (claim,) = summary["claims"]
    assert claim["outcome"] == "no verdict" and claim["n"] == [1, 2]
    assert claim["better_mean"] == pytest.approx(0.5)
    assert claim["worse_mean"] == pytest.approx(0.9)
    assert summary["missing"] == {"wide": [1]}  # the table's 2 seeds
    text = table_summary.markdown(table, summary)
    assert "| small | 50.00 / 60.00 | 60.00 | 70.00 | 14.14 | 2 |" in text
    assert "| wide | – | 100.0 | 100.0 | – | 1 | 10 | 3 |" in text
    assert (
        "| wide has lower cross-entropy than small | 0.500 vs 0.900 | 1 vs 2 "
        "| one seed: no verdict |" in text
    )
    assert "Not run yet: wide (seed 1)." in text
    assert "python -m training.train tiny_dyck_lstm model.units=12" in text


def test_summarize_shows_every_row_even_without_runs(tiny_table):
    table = table_schema.load_table(str(tiny_table))
    summary = table_summary.summarize(table, [])
    assert [row["name"] for row in summary["rows"]] == ["small", "wide"]
    text = table_summary.markdown(table, summary)
    assert "| small | 50.00 / 60.00 | – | – | – | 0 | – | – |" in text
    assert "Not run yet: every row (seed 0-1)." in text
    assert "| 0 vs 0 | not measured |" in text


def _welch_p(better, worse):
    """One-sided p of mean(better) > mean(worse): Welch's test written out."""
    a, b = np.asarray(better, float), np.asarray(worse, float)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    t = (a.mean() - b.mean()) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return scipy.stats.t.sf(t, df)


def _rank_p(better, worse):
    """One-sided exact p of the Mann-Whitney U: every split of the pooled seeds."""
    pooled = [*better, *worse]

    def u(group):  # pairs of (group, rest) the group wins, ties half
        rest = [v for i, v in enumerate(pooled) if i not in group]
        return sum(
            (pooled[i] > v) + 0.5 * (pooled[i] == v) for i in group for v in rest
        )

    observed = u(range(len(better)))
    splits = list(itertools.combinations(range(len(pooled)), len(better)))
    return sum(u(group) >= observed - 1e-9 for group in splits) / len(splits)


@pytest.mark.parametrize("seed", range(6))
def test_rank_p_is_scipys_exact_permutation_p(seed):
    # Counted by rank sums, listed by scipy: the same float, ties and all.
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 7, 2)
    better, worse = (rng.integers(0, 4, n).astype(float).tolist() for n in sizes)
    for alternative in ("greater", "less"):
        expected = scipy.stats.mannwhitneyu(
            better,
            worse,
            alternative=alternative,
            method=scipy.stats.PermutationMethod(n_resamples=math.inf),
        ).pvalue
        assert table_summary._rank_p(better, worse, alternative) == expected


@pytest.mark.parametrize(
    "better, worse, direction, outcome, known, shown",
    [
        # Hand-made seeds; `known` is scipy's one-sided Welch p, also computed
        # below, and the rank test's p is counted over every split.
        (
            [91.0, 93.5, 95.0],
            [52.0, 55.5, 61.0],
            "higher",
            "holds",
            7.489e-4,
            # 3 seeds a side: every seed above every other is 1/20, the least
            "holds (Welch p < 0.001, Mann-Whitney p = 0.05)",
        ),
        (
            [52.0, 55.5, 61.0],
            [91.0, 93.5, 95.0],
            "higher",
            "reversed",
            0.99925,
            "reversed (Welch p < 0.001, Mann-Whitney p = 0.05 for the opposite)",
        ),
        (
            [73.3, 50.1, 96.6],
            [46.8, 55.0, 38.7],
            "higher",
            "within seed spread",
            0.08907,
            "within seed spread (Welch p = 0.089, Mann-Whitney p = 0.1)",
        ),
        (
            [2.61, 2.63, 2.60, 2.62],
            [2.70, 2.71, 2.69],
            "lower",
            "holds",
            9.784e-5,
            "holds (Welch p < 0.001, Mann-Whitney p = 0.029)",
        ),
        (
            [2.70, 2.71, 2.69],
            [2.61, 2.63, 2.60, 2.62],
            "lower",
            "reversed",
            0.99990,
            "reversed (Welch p < 0.001, Mann-Whitney p = 0.029 for the opposite)",
        ),
        (
            # Bimodal: four seeds learned, one did not (below every other
            # row's seed). Welch alone would call it; the ranks do not.
            [97.5, 100.0, 0.0, 99.0, 95.1],
            [1.2, 0.1, 0.3, 0.4, 1.1],
            "higher",
            "within seed spread",
            0.008303,
            "within seed spread (Welch p = 0.0083, Mann-Whitney p = 0.075)",
        ),
    ],
)
def test_verdict_needs_welch_and_mann_whitney_to_agree(
    better, worse, direction, outcome, known, shown
):
    result = table_summary.verdict(better, worse, direction)
    assert result["outcome"] == outcome and result["n"] == [len(better), len(worse)]
    sign = 1 if direction == "higher" else -1
    signed = [sign * v for v in better], [sign * v for v in worse]
    expected = _welch_p(*signed)
    assert result["p"] == pytest.approx(expected, rel=1e-9)
    assert result["p"] == pytest.approx(known, rel=1e-3)
    assert result["p_opposite"] == pytest.approx(1 - expected, rel=1e-9)
    assert result["rank_p"] == pytest.approx(_rank_p(*signed), rel=1e-9)
    assert result["rank_p_opposite"] == pytest.approx(_rank_p(*signed[::-1]), rel=1e-9)
    assert result["verdict"] == shown


@pytest.mark.parametrize(
    "better, worse, outcome, text",
    [
        ([90.0], [50.0, 55.0, 60.0], "no verdict", "one seed: no verdict"),
        ([90.0, None], [50.0], "no verdict", "one seed: no verdict"),
        (
            [90.0, 92.0],
            [50.0, 55.0],
            "no verdict",
            "too few seeds (2 and 2): no verdict (Welch p = 0.011, "
            "Mann-Whitney p = 0.17)",
        ),
        (  # no spread at all: t is infinite, the ranks as far apart as 3 go
            [100.0] * 3,
            [0.0] * 3,
            "holds",
            "holds (Welch p < 0.001, Mann-Whitney p = 0.05)",
        ),
        (
            [0.0] * 3,
            [0.0] * 3,
            "within seed spread",
            "within seed spread (every seed equal: no difference)",
        ),
        ([], [1.0, 2.0, 3.0], "not measured", "not measured"),
    ],
)
def test_verdict_needs_three_seeds_a_side(better, worse, outcome, text):
    result = table_summary.verdict(better, worse, "higher")
    assert (result["outcome"], result["verdict"]) == (outcome, text)
    if outcome == "no verdict" and min(result["n"]) == 1:
        assert result["p"] is None and result["rank_p"] is None


def test_p_values_are_never_rounded_across_the_threshold():
    # Welch's p = 0.0498 would print as 0.05 at two digits, beside "holds".
    assert table_summary._p_text(0.0498) == "p < 0.05"
    assert table_summary._p_text(0.0502) == "p = 0.0502"  # not "0.05"
    assert table_summary._p_text(0.0512) == "p = 0.051"
    assert table_summary._p_text(0.31) == "p = 0.31"
    # The rank test counts p <= 0.05: 0.05 is itself, 0.0504 is not it.
    assert table_summary._p_text(0.05, inclusive=True) == "p = 0.05"
    assert table_summary._p_text(0.0504, inclusive=True) == "p = 0.0504"
