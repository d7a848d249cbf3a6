"""Targeted syntactic evaluation of a word-level language-model run.

    python -m training.syntax RUN_DIR [--suite marvin-linzen | PATH.jsonl]
        [--data-dir DIR] [--out DIR] [--every N]

The share of minimal pairs in which the run's model gives the grammatical
sentence the higher log-likelihood (Marvin & Linzen 2018), per category,
per test set and per condition, with the out-of-vocabulary counts (OOV words
are scored as `<unk>`; see `training.analysis.targeted_syntax`). Both
sentences of a pair are first written in the spelling conventions of the
corpus the run was trained on (`zoo.text_conventions`; recorded in its
`vocabulary.json`, or for an older run derived from its recipe's corpus),
so a suite written with case and punctuation reads on a PTB or WikiText
vocabulary. The report names the conventions and counts the pairs scored,
skipped and scored with an OOV word; fewer than half scored exits 2. Writes
`syntax.json`, `syntax.csv` and `syntax.png` to `--out` (default:
`RUN_DIR/syntax-SUITE/`). `--every N` scores every N-th pair only, in
the suite's order, for a quick look (the full Marvin & Linzen suite is
179,732 pairs).
"""

import sys
from pathlib import Path

from training import command_line
from training.analysis.loading import check_kind

MARVIN_LINZEN = "marvin-linzen"
EXAMPLES = (
    (
        "python -m training.syntax runs/ptb_word_lstm-small --every 100",
        "every 100th pair of Marvin & Linzen's suite, into "
        "runs/ptb_word_lstm-small/syntax-marvin-linzen/",
    ),
    (
        "python -m training.syntax runs/ptb_word_lstm-small --suite pairs.jsonl "
        "--out syntax/",
        "your own minimal pairs (sentence_good/sentence_bad lines)",
    ),
)


def load_suite(suite, data_dir=None):
    """The pairs of `--suite`: the Marvin & Linzen sets or a JSON Lines file."""
    from training.data import minimal_pairs

    if suite == MARVIN_LINZEN:
        return minimal_pairs.load_marvin_linzen(data_dir)
    return minimal_pairs.load_jsonl(suite)


def evaluate_syntax(run_dir, suite=MARVIN_LINZEN, data_dir=None, out=None, every=1):
    """Scores `suite` (every `every`-th pair) with the run's model.

    Writes and returns the results, once every check has passed (the
    options, the run, the suite, and that at least half of the pairs can be
    scored: `training.analysis.targeted_syntax.check_scored`).
    """
    from training import plots, runs
    from training.analysis import targeted_syntax

    if every < 1:
        raise ValueError(f"--every must be at least 1; received {every!r}.")
    name = MARVIN_LINZEN if suite == MARVIN_LINZEN else Path(suite).stem
    if not out and runs.read_only(run_dir):
        raise ValueError(
            f"{run_dir} is a preset, which is read-only; expected --out DIR for "
            "syntax.json, syntax.csv and syntax.png."
        )
    out = plots.check_out_dir(out if out else Path(run_dir) / f"syntax-{name}")
    run = runs.load_run(run_dir)
    check_kind(run.recipe, ("language_model",), "Syntactic evaluation", run_dir)
    pairs = load_suite(suite, data_dir)[::every]
    result = targeted_syntax.evaluate_pairs(
        run.model, run.vocabulary, pairs, conventions=run.task.conventions
    )
    targeted_syntax.check_scored(result, run.vocabulary)
    result["suite"] = suite
    result["every"] = every
    plots.make_out_dir(out)
    runs.write_json(out / "syntax.json", result)
    plots.write_table(out / "syntax.csv", targeted_syntax.table_rows(result))
    targeted_syntax.plot(
        result, out / "syntax.png", title=f"Syntactic evaluation: {name}"
    )
    return result, out


def report(result):
    from training.analysis import targeted_syntax

    overall = result["overall"]
    reasons = targeted_syntax.skip_reasons(result)
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


def main(argv=None):
    parser = command_line.parser("python -m training.syntax", __doc__, EXAMPLES)
    parser.add_argument("run_dir", help="a word-level language model's run")
    parser.add_argument(
        "--suite",
        default=MARVIN_LINZEN,
        help=f"{MARVIN_LINZEN} (default) or a JSON Lines file of "
        "sentence_good/sentence_bad pairs",
    )
    parser.add_argument("--data-dir", help="folder holding marvin_linzen_2018/")
    parser.add_argument("--out", help="folder for syntax.json/.csv/.png")
    parser.add_argument(
        "--every", type=int, default=1, help="score every N-th pair only"
    )
    args = parser.parse_args(argv)
    try:
        command_line.start_tensorflow()
        result, out = evaluate_syntax(
            args.run_dir, args.suite, args.data_dir, args.out, args.every
        )
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(report(result))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
