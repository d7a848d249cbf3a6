import numpy as np
import pytest

from tests.training.tiny import TINY_RECOGNITION
from training.core import metrics
from training.data import recognition_sets
from training.reproduction import table_baselines, table_schema, table_summary

# D2 ids: ( = 3, [ = 4, ) = 5, ] = 6. Palindromes: a = 3, b = 4, c = 5.
D2 = (
    [[3, 5], [3, 4, 6, 5], [3, 6, 4, 5], [5, 3], [3, 3], [4, 6]],
    [1, 1, 0, 0, 0, 1],
)
PALINDROMES = ([[5], [3, 5, 3], [3, 5, 4], [3, 4, 3], [5, 5, 5]], [1, 1, 0, 0, 0])


def _scores(rule, language, strings, labels, majority=0):
    split = recognition_sets.RecognitionSplit(
        strings=strings,
        labels=np.asarray(labels),
        is_hard=np.zeros(len(labels), dtype=bool),
        min_length=1,
        max_length=4,
    )
    arrays = recognition_sets.frame(split, language)
    accept, next_symbol = table_baselines.rule_outputs(rule, arrays, language, majority)
    found = metrics.recognition_metrics(arrays, accept, next_symbol)
    return [found[key] for key in ("accuracy", "strict", "strict_positives")]


@pytest.mark.parametrize(
    "rule, language, split, expected",
    [
        # Counting accepts ( ] [ ) and ) ( (balanced counts, wrong order) and
        # is right at every step of every positive (an open bracket is
        # always a legal next symbol): final 4/6, strict 4/6, positives 3/3.
        ("counting", "D2", D2, [4 / 6, 4 / 6, 1.0]),
        # Reject everywhere: right on the negatives' last step, but the empty
        # prefix is a Dyck string, so no string is right at every step.
        ("majority class", "D2", D2, [3 / 6, 0.0, 0.0]),
        # One c: accepts a c b (final 4/5); at every step only a b a (no c)
        # and c c c (c is a palindrome, then two markers) are right; no
        # positive, as `a` is never legal after the centre of these.
        ("centre marker", "palindrome", PALINDROMES, [4 / 5, 2 / 5, 0.0]),
        # Reject everywhere: wrong on the positives and on c c c's prefix c.
        ("majority class", "palindrome", PALINDROMES, [3 / 5, 2 / 5, 0.0]),
    ],
)
def test_rules_score_what_is_counted_by_hand(rule, language, split, expected):
    assert _scores(rule, language, *split) == pytest.approx(expected)


def test_majority_class_answers_the_majority_it_is_given():
    assert _scores("majority class", "D2", *D2, majority=1)[0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="rule must be one of"):
        _scores("coin", "D2", *D2)


def _result(positives=None, hard=None, mirror=None):
    test = {"strict_positives": positives, "next_symbol_positives": mirror}
    test = {key: value for key, value in test.items() if value is not None}
    found = {"test": test}
    if hard is not None:
        found["hard"] = {"strict": hard}
    return {"metrics": found}


def test_learned_asks_ninety_percent_on_positives_and_beating_the_rules():
    results = [
        _result(0.95, 0.99, 0.96),  # learned
        _result(0.899, 0.99),  # below 90% on positives
        _result(1.0, 0.8),  # a rule's: level with the best rule on hard
        _result(1.0),  # no hard test in its record: not measured
        _result(),
    ]
    assert table_baselines.learned(results, bar=0.8) == {
        "learned": 1,
        "n": 3,
        "values": [0.95, 0.899, 1.0, 1.0, None],
        "hard": [0.99, 0.99, 0.8, None, None],
        "mirror": [0.96, None, None, None, None],
        "bar": 0.8,
    }
    assert table_baselines.learned(results, bar=None)["n"] == 0  # no rule known


def test_no_rule_passes_learned_the_stack(tmp_path):
    path = tmp_path / "tiny_recognition.toml"
    path.write_text(TINY_RECOGNITION)
    table = table_schema.load_table(str(path))
    rules = table_baselines.rule_results(table)
    for language in ("D2", "palindrome"):
        mine = [r for r in rules if f"({language})" in r["row"]]
        bar = table_baselines.rule_bar(mine)
        for rule in mine:
            assert table_baselines.learned([rule], bar)["learned"] == 0


def test_a_recognition_table_gets_rule_rows_per_language(tmp_path):
    path = tmp_path / "tiny_recognition.toml"
    path.write_text(TINY_RECOGNITION)
    table = table_schema.load_table(str(path))
    rules = table_baselines.rule_results(table)
    assert [r["row"] for r in rules] == [
        "rule (D2): majority class",
        "rule (D2): counting",
        "rule (palindrome): majority class",
        "rule (palindrome): centre marker",
    ]
    counting = rules[1]["metrics"]
    assert counting["test"]["strict_positives"] == 1.0
    assert 0.5 <= counting["hard"]["strict"] < 1.0  # a swap fools a count
    results = [
        {
            "row": "lstm",
            "seed": 0,
            "seconds": 1.0,
            "metrics": {
                "test": {"strict": 0.4, "strict_positives": 0.92},
                "hard": {"strict": 0.99},
            },
        },
        {
            "row": "lstm",
            "seed": 1,
            "seconds": 1.0,
            "metrics": {
                "test": {"strict": 0.4, "strict_positives": 0.95},
                "hard": {"strict": counting["hard"]["strict"]},  # a count's
            },
        },
    ]
    summary = table_summary.summarize(table, results, rules=rules)
    text = table_summary.markdown(table, summary)
    assert "| rule (D2): counting | – | " in text
    hard = f"{100 * counting['hard']['strict']:.1f}"
    assert f"| lstm | 1 of 2 | 92.0, 95.0 | 99.0, {hard} | –, – |" in text
    assert "| palindrome_lstm | – | – | – | – |" in text  # no record yet
    assert f"| rule (D2): counting | 0 of 1 | 100.0 | {hard} |" in text
    assert "the counting rule is right at every step" in text
    assert "Hard tests (`hard`: lengths 56-102" in text
    assert "rule (D2): counting: `python" not in text  # computed, not trained
    assert [row["name"] for row in summary["rows"] if row["rule"]] == [
        r["row"] for r in rules
    ]


def test_a_table_without_recognition_rows_has_no_rules(tiny_table):
    table = table_schema.load_table(str(tiny_table))
    assert table_baselines.rule_results(table) == []
    summary = table_summary.summarize(table, [])
    assert "learned the stack" not in table_summary.markdown(table, summary)
