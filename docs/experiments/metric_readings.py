"""Re-scores finished recognition runs under each reading of Mali et al.'s metric.

    python docs/experiments/metric_readings.py OUT [--split test] [--rows ROW ...]

OUT is a reproduction runner's output folder (`OUT/runs/ROW/seed-N`, e.g.
`reproduction/mali_d2`). Every finished run's best model is loaded (no
retraining), the split predicted once, and the strings scored under five
readings the paper's words allow (section 5: "a string is classified
correctly only if all the predictions are correct"):

- `strict`: our headline, every step of every string: the accept output
  right for the prefix's membership and, on positives, a legal arg-max next
  symbol (`training.core.metrics.strict_recognition_accuracy`);
- `strict_pos`: the same on positive strings only;
- `next_pos`: the next-symbol half alone on positive strings (a legal arg-max
  next symbol at every step; Suzgun et al.'s criterion, which Mali et al.
  extend), the accept output not looked at;
- `accept_all`: the accept half alone, every step of every string;
- `final`: the whole string accepted or rejected at its last step.

Prints, per row, the mean over seeds of each reading in percent, and the
number of seeds. Needs the data generated for the split (no files read).
"""

import argparse
import sys
from pathlib import Path

import numpy as np

from training.core import metrics
from training.runs import runs


def readings(run, split):
    """The five readings (fractions) of one finished run on `split`."""
    arrays = run.task.arrays[split]
    outputs = run.model.predict(arrays.inputs, batch_size=256, verbose=0)
    accept = outputs["accept"][..., 0]
    positive = arrays.labels == 1

    def strict(rows, accept_scores, with_next):
        extra = {}
        if with_next:
            extra = {
                "labels": arrays.labels[rows],
                "next_symbol": outputs["next_symbol"][rows],
                "legal_next": arrays.legal_next[rows],
            }
        return metrics.strict_recognition_accuracy(
            accept_scores[rows],
            arrays.prefix_labels[rows],
            arrays.lengths[rows],
            **extra,
        ).overall

    every = np.ones(len(positive), bool)
    perfect_accept = arrays.prefix_labels.astype(float)  # isolates next symbol
    final = metrics.recognition_accuracy(accept, arrays.labels, arrays.lengths)
    return {
        "strict": strict(every, accept, True),
        "strict_pos": strict(positive, accept, True),
        "next_pos": strict(positive, perfect_accept, True),
        "accept_all": strict(every, accept, False),
        "final": final.overall,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--rows", nargs="*", default=None)
    args = parser.parse_args(argv)
    names = ("strict", "strict_pos", "next_pos", "accept_all", "final")
    print(f"{args.out} {args.split}: mean over seeds, percent")
    print(f"{'row':<16}" + "".join(f"{n:>12}" for n in names) + f"{'seeds':>7}")
    for row_dir in sorted((args.out / "runs").iterdir()):
        if args.rows and row_dir.name not in args.rows:
            continue
        scored = []
        for seed_dir in sorted(row_dir.glob("seed-*")):
            if (seed_dir / runs.METRICS).is_file():
                scored.append(readings(runs.load_run(seed_dir), args.split))
        if scored:
            means = [100 * np.mean([s[n] for s in scored]) for n in names]
            print(
                f"{row_dir.name:<16}"
                + "".join(f"{m:>12.2f}" for m in means)
                + f"{len(scored):>7}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
