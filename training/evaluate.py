"""Evaluates a trained run on one split and writes the metrics to JSON.

    python -m training.evaluate RUN_DIR [--split SPLIT]

SPLIT is one of the task's splits (recognition: train, valid, test,
test_mixed, long_120, long_160).

Prints the task's metrics (WCPA and the LDPA table for Dyck, perplexity and
bits per token for language models) and writes them to
`RUN_DIR/evaluation-SPLIT.json`.
"""

import argparse
import sys

from training import runs


def evaluate_run(run_dir, split="test"):
    """Returns `(task, metrics)` of the run's best model on `split`."""
    _, _, task, model = runs.load_run(run_dir)
    if split not in task.splits:
        raise ValueError(
            f"Unknown split {split!r} for this task; expected one of: "
            f"{', '.join(task.splits)}."
        )
    metrics = task.evaluate(model, split)
    runs.write_json(runs.check_run(run_dir) / f"evaluation-{split}.json", metrics)
    return task, metrics


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluate", description=__doc__.splitlines()[0]
    )
    parser.add_argument("run_dir")
    parser.add_argument("--split", default="test")
    args = parser.parse_args(argv)
    try:
        task, metrics = evaluate_run(args.run_dir, args.split)
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(task.report(metrics, args.split))
    return 0


if __name__ == "__main__":
    sys.exit(main())
