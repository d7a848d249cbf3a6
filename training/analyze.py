"""Looks inside trained runs: writes a figure (PNG) and its numbers (JSON/CSV).

    python -m training.analyze WHAT RUN_DIR [RUN_DIR ...] --out DIR [--split test]

WHAT is one of:
    surprisal  loss on and 1..4 steps after the 10% most surprising tokens
               (Krause et al. 2016, 4.2), one line per language-model run;
               for two runs, the first's advantage after surprises against
               its advantage overall, with a bootstrap interval
    pabs       principal angles between the transition matrices of
               second-order LSTM, mmRNN and mmLSTM runs; --init: also of
               each run at initialization (dashed), the baseline;
               --across RUN_A RUN_B [RUN ...]: between corresponding
               matrices of each pair of runs of one architecture (LSTMs
               too: two trained from two seeds), with --init also between
               their initial models
    routing    which cell (second-order LSTM) or choice matrix (mmRNN,
               mmLSTM) each token used, and the mean weight per token type
    stack      push/pop/no-op per step of a stack recognizer, and the share
               of steps that match a correct pushdown automaton
    ldpa       accuracy against closing distance of Dyck runs
    curves     a column of the per-epoch log (--column, default val_wcpa)
               against the epoch, of runs or of records in results/
               (Figure 3 of the second-order report); reads no model
"""

import sys
from pathlib import Path

from training import analysis
from training.cli import command_line

EXAMPLES = (
    (
        "python -m training.analyze pabs runs/so_dyck --init --out analysis/pabs",
        "principal angles of a second-order LSTM run, trained and at initialization",
    ),
    (
        "python -m training.analyze curves results/so_dyck/*/seed-0 --out "
        "analysis/curves",
        "validation WCPA per epoch of recorded runs (loads no model)",
    ),
)


def main(argv=None):
    parser = command_line.parser(
        "python -m training.analyze",
        __doc__,
        EXAMPLES,
        notes="\n".join(__doc__.splitlines()[4:]).rstrip(),
    )
    parser.add_argument("what", choices=analysis.ANALYSES)
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("--out", required=True, help="folder for the PNG and numbers")
    parser.add_argument("--split", default="test")
    parser.add_argument(
        "--text",
        action="append",
        default=[],
        help="routing/stack: a string to show (repeatable); default: the split's",
    )
    parser.add_argument("--samples", type=int, default=4, help="strings to show")
    parser.add_argument("--fraction", type=float, default=0.1, help="surprisal")
    parser.add_argument(
        "--column", default="val_wcpa", help="curves: the log.csv column to draw"
    )
    parser.add_argument(
        "--init",
        action="store_true",
        help="pabs: also the runs at initialization (the baseline, dashed)",
    )
    parser.add_argument(
        "--across",
        action="store_true",
        help="pabs: between corresponding matrices of each pair of runs",
    )
    args = parser.parse_intermixed_args(argv)
    out = Path(args.out)
    try:
        if args.what != "pabs" and (args.init or args.across):
            option = "--init" if args.init else "--across"
            raise ValueError(
                f"{option} is an option of pabs; received it with {args.what}."
            )
        if args.what != "curves":  # the only analysis that loads no model
            command_line.start_tensorflow()
        lines = analysis.analyze(
            args.what,
            args.run_dirs,
            out,
            split=args.split,
            texts=args.text,
            samples=args.samples,
            fraction=args.fraction,
            column=args.column,
            init=args.init,
            across=args.across,
        )
    except KeyboardInterrupt:  # --out is made only once everything ran
        parser.exit(130, f"{parser.prog}: interrupted; nothing was written\n")
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    for line in lines:
        print(line)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(command_line.run(main))
