"""Evaluates a trained run on one split and writes the metrics to JSON.

    python -m training.evaluate RUN_DIR [--split SPLIT]
    python -m training.evaluate RUN_DIR --dynamic [--learning-rate ETA]
        [--decay LAMBDA] [--segment N] [--rms [--rms-segments N]]

SPLIT is one of the task's splits (recognition: train, valid, test,
test_mixed, long_120, long_160, hard, hard_long).

Prints the task's metrics (WCPA and the LDPA table for Dyck, perplexity and
bits per token for language models) and writes them to
`RUN_DIR/evaluation-SPLIT.json` (`training.runs.evaluation.evaluate_run`).
RUN_DIR may be a preset, `preset:NAME` (`zoo.presets.available()`) or
`preset:PATH`, which is only read: its numbers are printed, not written.

With `--dynamic` (language-model runs), Krause et al. 2017's dynamic
evaluation (`training.analysis.dynamic.evaluate_dynamic`): the split is read
in segments of N tokens, state carried, each scored and then learned from,
with decay towards the trained weights; `--rms` uses the RMS-normalised
update with the mean squared gradients of the first `--rms-segments`
training segments. Prints the static (same segments, no updates) and dynamic
numbers and writes them to `RUN_DIR/evaluation-SPLIT-dynamic.json`; the
saved model never changes.
"""

import sys

from training.cli import command_line

EXAMPLES = (
    (
        "python -m training.evaluate runs/dyck2_dyck_rnn-small",
        "the run's metrics on its test split, written to evaluation-test.json",
    ),
    (
        "python -m training.evaluate runs/ptb_char_lstm-small --dynamic --rms",
        "dynamic evaluation of a language model, RMS-normalised",
    ),
)


def main(argv=None):
    parser = command_line.parser("python -m training.evaluate", __doc__, EXAMPLES)
    parser.add_argument("run_dir", help="a run directory, preset:NAME or preset:PATH")
    parser.add_argument(
        "--split", default="test", help="one of the task's splits (default: test)"
    )
    parser.add_argument(
        "--dynamic", action="store_true", help="dynamic evaluation (language models)"
    )
    dynamic_options = [  # the settings of training.analysis.dynamic.evaluate_dynamic
        parser.add_argument("--learning-rate", type=float, help="eta (default 1e-3)"),
        parser.add_argument("--decay", type=float, help="lambda (default 0)"),
        parser.add_argument(
            "--segment", type=int, help="tokens per update (default 20)"
        ),
        parser.add_argument("--rms", action="store_true", help="RMS-normalised update"),
        parser.add_argument(
            "--rms-segments", type=int, help="training segments for --rms (default 200)"
        ),
    ]
    args = parser.parse_args(argv)
    given = {action.dest: getattr(args, action.dest) for action in dynamic_options}
    settings = {
        key: value
        for key, value in given.items()
        if value is not None and value is not False
    }
    if settings and not args.dynamic:
        flags = ", ".join("--" + key.replace("_", "-") for key in settings)
        parser.exit(2, f"{parser.prog}: error: {flags} need --dynamic.\n")
    if args.rms_segments is not None and not args.rms:
        parser.exit(2, f"{parser.prog}: error: --rms-segments needs --rms.\n")
    try:
        command_line.start_tensorflow()
        from training.analysis import dynamic
        from training.runs import evaluation

        if args.dynamic:
            _, result = dynamic.evaluate_dynamic(args.run_dir, args.split, **settings)
        else:
            task, metrics = evaluation.evaluate_run(args.run_dir, args.split)
    except KeyboardInterrupt:
        parser.exit(130, f"{parser.prog}: interrupted; nothing was written\n")
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if args.dynamic:
        print(dynamic.report_dynamic(result, args.split))
    else:
        print(task.report(metrics, args.split))
    return 0


if __name__ == "__main__":
    sys.exit(command_line.run(main))
