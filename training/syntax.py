"""Targeted syntactic evaluation of a word-level language-model run.

    python -m training.syntax RUN_DIR [--suite marvin-linzen | PATH.jsonl]
        [--data-dir DIR] [--out DIR] [--every N]

The share of minimal pairs in which the run's model gives the grammatical
sentence the higher log-likelihood (Marvin & Linzen 2018), per category,
per test set and per condition, with the out-of-vocabulary counts (OOV words
are scored as `<unk>`; see `training.analysis.targeted_syntax`). Both
sentences of a pair are first written in the spelling conventions of the
corpus the run was trained on (`zoo.text_conventions`, recorded in its
`vocabulary.json`),
so a suite written with case and punctuation reads on a PTB or WikiText
vocabulary. The report names the conventions and counts the pairs scored,
skipped and scored with an OOV word; fewer than half scored exits 2. Writes
`syntax.json`, `syntax.csv` and `syntax.png` to `--out` (default:
`RUN_DIR/syntax-SUITE/`). `--every N` scores every N-th pair only, in
the suite's order, for a quick look (the full Marvin & Linzen suite is
179,732 pairs).
"""

import sys

from training.cli import command_line
from training.data.minimal_pairs import MARVIN_LINZEN_SUITE

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


def main(argv=None):
    parser = command_line.parser("python -m training.syntax", __doc__, EXAMPLES)
    parser.add_argument("run_dir", help="a word-level language model's run")
    parser.add_argument(
        "--suite",
        default=MARVIN_LINZEN_SUITE,
        help=f"{MARVIN_LINZEN_SUITE} (default) or a JSON Lines file of "
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
        from training.analysis import targeted_syntax

        result, out = targeted_syntax.evaluate_syntax(
            args.run_dir, args.suite, args.data_dir, args.out, args.every
        )
    except KeyboardInterrupt:  # --out is made only once everything ran
        parser.exit(130, f"{parser.prog}: interrupted; nothing was written\n")
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(targeted_syntax.report(result))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(command_line.run(main))
