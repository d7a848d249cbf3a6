"""Evaluates a trained run on one split and writes the metrics to JSON.

    python -m training.evaluate RUN_DIR [--split SPLIT]
    python -m training.evaluate RUN_DIR --dynamic [--learning-rate ETA]
        [--decay LAMBDA] [--segment N] [--rms [--rms-segments N]]

SPLIT is one of the task's splits (recognition: train, valid, test,
test_mixed, long_120, long_160, hard, hard_long).

Prints the task's metrics (WCPA and the LDPA table for Dyck, perplexity and
bits per token for language models) and writes them to
`RUN_DIR/evaluation-SPLIT.json`. RUN_DIR may be a preset, `preset:NAME`
(`zoo.presets.available()`) or `preset:PATH`, which is only read: its
numbers are printed, not written.

With `--dynamic` (language-model runs), Krause et al. 2017's dynamic
evaluation (`training.analysis.dynamic`): the split is read in segments of N
tokens, state carried, each scored and then learned from, with decay towards
the trained weights; `--rms` uses the RMS-normalised update with the mean
squared gradients of the first `--rms-segments` training segments. Prints
the static (same segments, no updates) and dynamic numbers and writes them
to `RUN_DIR/evaluation-SPLIT-dynamic.json`; the saved model never changes.
"""

import math
import sys

from training import command_line
from training.analysis.loading import check_kind, stream_ids

DYNAMIC_DEFAULTS = {
    "learning_rate": 1e-3,
    "decay": 0.0,
    "segment": 20,
    "rms": False,
    "rms_segments": 200,
}


def evaluate_run(run_dir, split="test"):
    """Returns `(task, metrics)` of the run's best model on `split`."""
    from training import runs

    run = runs.load_run(run_dir)
    task = run.task
    if split not in task.splits:
        raise ValueError(
            f"Unknown split {split!r} for this task; expected one of: "
            f"{', '.join(task.splits)}."
        )
    metrics = task.evaluate(run.model, split)
    if not runs.read_only(run_dir):  # a preset
        runs.write_json(runs.check_run(run_dir) / f"evaluation-{split}.json", metrics)
    return task, metrics


def evaluate_dynamic(run_dir, split="test", **settings):
    """Returns `(task, result)`: static and dynamic numbers of the run on `split`.

    `settings` are those of `DYNAMIC_DEFAULTS`; `result` holds them beside
    `dynamic.dynamic_evaluation`'s dict. Nothing in `run_dir` but the result
    file is written, and that only when the settings are valid (finite and
    in range, checked before the run is loaded) and the dynamic
    cross-entropy is finite (a `ValueError` otherwise).
    """
    from training import runs
    from training.analysis import dynamic
    from zoo.checks import check_number

    unknown = sorted(set(settings) - set(DYNAMIC_DEFAULTS))
    if unknown:
        raise TypeError(f"Unknown dynamic-evaluation settings: {unknown}.")
    settings = {**DYNAMIC_DEFAULTS, **settings}
    for key in ("segment", "rms_segments"):
        if settings[key] < 1:
            raise ValueError(
                f"--{key.replace('_', '-')} must be at least 1; received "
                f"{settings[key]!r}."
            )
    check_number("--learning-rate", settings["learning_rate"], low=0)
    check_number("--decay", settings["decay"], 0, 1)
    run = runs.load_run(run_dir)
    check_kind(run.recipe, ("language_model",), "Dynamic evaluation", run_dir)
    task, model = run.task, run.model
    ids = stream_ids(task, split)
    statistics = None
    if settings["rms"]:
        statistics = dynamic.gradient_statistics(
            task.build_model,
            model,
            task.encoded["train"].ids,
            segment=settings["segment"],
            max_segments=settings["rms_segments"],
        )
    result = dynamic.dynamic_evaluation(
        task.build_model,
        model,
        ids,
        learning_rate=settings["learning_rate"],
        decay=settings["decay"],
        segment=settings["segment"],
        statistics=statistics,
    )
    result["settings"] = settings
    if not math.isfinite(result["dynamic"]["perplexity"]):
        raise ValueError(
            f"Dynamic evaluation diverged: the cross-entropy became "
            f"{result['dynamic']['cross_entropy']} at --learning-rate "
            f"{settings['learning_rate']:g}; expected a smaller learning rate "
            "(nothing was written)."
        )
    if not runs.read_only(run_dir):  # a preset
        runs.write_json(
            runs.check_run(run_dir) / f"evaluation-{split}-dynamic.json", result
        )
    return task, result


def report_dynamic(result, split):
    static, dynamic_ = result["static"], result["dynamic"]
    change = dynamic_["perplexity"] / static["perplexity"] - 1
    settings = result["settings"]
    update = "RMS-normalised" if settings["rms"] else "SGD"
    return "\n".join(
        [
            f"{split}, {result['tokens']:,} tokens in {result['segments']:,} "
            f"segments of {settings['segment']} ({update}, learning rate "
            f"{settings['learning_rate']:g}, decay {settings['decay']:g}):",
            f"  static:  cross-entropy {static['cross_entropy']:.4f} nats/token, "
            f"perplexity {static['perplexity']:.2f}, "
            f"{static['bits_per_token']:.4f} bits/token",
            f"  dynamic: cross-entropy {dynamic_['cross_entropy']:.4f} nats/token, "
            f"perplexity {dynamic_['perplexity']:.2f}, "
            f"{dynamic_['bits_per_token']:.4f} bits/token "
            f"(perplexity {change:+.1%})",
        ]
    )


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
    parser.add_argument("--learning-rate", type=float, help="eta (default 1e-3)")
    parser.add_argument("--decay", type=float, help="lambda (default 0)")
    parser.add_argument("--segment", type=int, help="tokens per update (default 20)")
    parser.add_argument("--rms", action="store_true", help="RMS-normalised update")
    parser.add_argument(
        "--rms-segments", type=int, help="training segments for --rms (default 200)"
    )
    args = parser.parse_args(argv)
    settings = {
        key: getattr(args, key)
        for key in DYNAMIC_DEFAULTS
        if getattr(args, key) is not None and getattr(args, key) is not False
    }
    if settings and not args.dynamic:
        flags = ", ".join("--" + key.replace("_", "-") for key in settings)
        parser.exit(2, f"{parser.prog}: error: {flags} need --dynamic.\n")
    if args.rms_segments is not None and not args.rms:
        parser.exit(2, f"{parser.prog}: error: --rms-segments needs --rms.\n")
    try:
        command_line.start_tensorflow()
        if args.dynamic:
            _, result = evaluate_dynamic(args.run_dir, args.split, **settings)
        else:
            task, metrics = evaluate_run(args.run_dir, args.split)
    except KeyboardInterrupt:
        parser.exit(130, f"{parser.prog}: interrupted; nothing was written\n")
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if args.dynamic:
        print(report_dynamic(result, args.split))
    else:
        print(task.report(metrics, args.split))
    return 0


if __name__ == "__main__":
    sys.exit(main())
