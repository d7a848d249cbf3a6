"""Adds metrics a run lacks by evaluating its best model again (no retraining).

    python docs/experiments/rescore.py OUT RESULTS/TABLE [--unless KEY.PATH]

OUT is a reproduction runner's output folder (`OUT/runs/ROW/seed-N`, with
the runs' `best.keras`); RESULTS/TABLE the table's records
(`results/mali_d2`). For every finished run whose `metrics.json` lacks a key
that `task.evaluate` gives today (e.g. `strict_positives`, added while
`mali_d2` was running), the best model is evaluated on every split with
today's code and the new keys are added; every key the run already had must
come out equal (else the run is left alone and named), so nothing measured
is changed. The completed `metrics.json` replaces the run's and its record's.
Prints one line per run.
"""

import argparse
import sys
from pathlib import Path

from training.runs import runs


def missing_keys(old, new, path=""):
    """Keys of `new` that `old` lacks, and shared keys whose values differ."""
    added, changed = [], []
    for key, value in new.items():
        where = f"{path}{key}"
        if key not in old:
            added.append(where)
        elif isinstance(value, dict) and isinstance(old[key], dict):
            more, differ = missing_keys(old[key], value, f"{where}.")
            added += more
            changed += differ
        elif value != old[key]:
            changed.append(where)
    return added, changed


def has_path(metrics, path):
    for part in path.split("."):
        if not isinstance(metrics, dict) or part not in metrics:
            return False
        metrics = metrics[part]
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("records", type=Path)
    parser.add_argument(
        "--unless", default=None, help="skip records whose metrics have this key path"
    )
    args = parser.parse_args(argv)
    for record in sorted(args.records.glob("*/seed-*")):
        run_dir = args.out / "runs" / record.parent.name / record.name
        old = runs.read_json(record / runs.METRICS)
        if args.unless and has_path(old, args.unless):
            print(f"{record}: has {args.unless}", flush=True)
            continue
        if not (run_dir / runs.BEST).is_file():
            print(f"{record}: no best.keras in {run_dir}; left alone")
            continue
        run = runs.load_run(run_dir)
        new = {split: run.task.evaluate(run.model, split) for split in run.task.splits}
        new[runs.JIT_COMPILE] = old.get(runs.JIT_COMPILE)
        added, changed = missing_keys(old, new)
        if changed:
            print(f"{record}: {len(changed)} values differ ({changed[0]}); left alone")
            sys.stdout.flush()
            continue
        if not added:
            print(f"{record}: complete")
            continue
        for path in (run_dir / runs.METRICS, record / runs.METRICS):
            runs.write_json(path, new)
        names = sorted({key.split(".")[-1] for key in added})
        print(f"{record}: added {', '.join(names)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
