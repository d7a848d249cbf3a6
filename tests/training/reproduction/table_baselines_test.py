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


def test_learned_counts_seeds_at_ninety_percent():
    results = [
        {"metrics": {"test": {"strict_positives": value}}}
        for value in (0.95, 0.899, 1.0)
    ] + [{"metrics": {"test": {}}}]
    assert table_baselines.learned(results) == {
        "learned": 2,
        "n": 3,
        "values": [0.95, 0.899, 1.0, None],
    }


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
            "metrics": {"test": {"strict": 0.4, "strict_positives": 0.92}},
        }
    ]
    summary = table_summary.summarize(table, results, rules=rules)
    text = table_summary.markdown(table, summary)
    assert "| rule (D2): counting | – | " in text
    assert "| lstm | 1 of 1 | 92.0 |" in text  # learned the stack
    assert "| palindrome_lstm | – | – |" in text  # no record yet
    assert "| rule (D2): counting | 1 of 1 | 100.0 |" in text
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
