"""The zoo's TensorFlow loop and grouped steps against Keras's own: same losses.

    PYTHONPATH=. python benchmarks/same_losses.py [--epochs 3]
        [--runs dyck2_lstm:paper recognition_d2_diffstk_rnn_paper:small]
        [--tolerance 1e-6] [override ...]

Trains each recipe (`name:scale`) twice with `training.runs.runs.train_run`, from
the same seed, in temporary run directories, each in its own process:

- `zoo`: as `training.train` trains it, with the zoo's TensorFlow recurrent
  loop (`zoo.tensorflow_loop`) and its grouped XLA train function
  (`zoo.tensorflow_steps`);
- `keras`: with both replaced by the identity in every builder module before
  the model is built, so Keras's own loop and train function run.

`train.jit_compile` and `train.steps_per_execution` stay `"auto"` (the
choice is printed) unless overridden. Printed: every epoch's `loss` and
`val_loss` from each run's `log.csv` and the largest relative difference
between the two runs; the script fails if it is above `--tolerance`.
"""

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PATCHED = ("zoo.models", "zoo.labeling", "zoo.cells.dyck_rnn")


def worker(name, scale, overrides, keras_loop):
    """Trains one run; prints its per-epoch losses and compile choice as JSON."""
    import importlib

    if keras_loop:
        for module_name in PATCHED:
            module = importlib.import_module(module_name)
            for function in ("tensorflow_loop", "tensorflow_steps"):
                if hasattr(module, function):
                    setattr(module, function, lambda x: x)
    from training.runs import runs
    from training.tasks import recipes

    recipe = recipes.resolve(name, scale, overrides)
    with tempfile.TemporaryDirectory() as run_dir:
        metrics = runs.train_run(recipe, Path(run_dir) / "run")
        with open(Path(run_dir) / "run" / runs.LOG) as file:
            rows = list(csv.DictReader(file))
    print(
        json.dumps(
            {
                "loss": [float(row["loss"]) for row in rows],
                "val_loss": [float(row["val_loss"]) for row in rows],
                "jit_compile": metrics["jit_compile"]["used"],
                "steps_per_execution": metrics["steps_per_execution"]["used"],
            }
        )
    )


def run(name, scale, overrides, keras_loop):
    command = [sys.executable, __file__, "--worker", f"{name}:{scale}", *overrides]
    if keras_loop:
        command.append("--keras-loop")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        nargs="+",
        default=["dyck2_lstm:paper", "recognition_d2_diffstk_rnn_paper:small"],
    )
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=1e-6)
    parser.add_argument("overrides", nargs="*", metavar="section.key=value")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--keras-loop", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_intermixed_args()
    if args.worker:
        name, scale = args.worker.split(":")
        return worker(name, scale, args.overrides, args.keras_loop)
    worst = 0.0
    for spec in args.runs:
        name, scale = spec.split(":")
        overrides = [f"train.epochs={args.epochs}", *args.overrides]
        zoo_run, keras_run = (run(name, scale, overrides, flag) for flag in (0, 1))
        print(
            f"{name} --scale {scale} {' '.join(overrides)}: jit_compile "
            f"{zoo_run['jit_compile']}, steps_per_execution "
            f"{zoo_run['steps_per_execution']}"
        )
        print(f"{'epoch':>5}{'column':>10}{'zoo':>16}{'keras':>16}{'rel. diff':>12}")
        for column in ("loss", "val_loss"):
            for epoch, (a, b) in enumerate(
                zip(zoo_run[column], keras_run[column], strict=True), 1
            ):
                difference = abs(a - b) / max(abs(b), 1e-30)
                worst = max(worst, difference)
                print(f"{epoch:>5}{column:>10}{a:>16.9f}{b:>16.9f}{difference:>12.2e}")
    verdict = "within" if worst <= args.tolerance else "ABOVE"
    print(f"max relative difference {worst:.2e}, {verdict} {args.tolerance:g}")
    if worst > args.tolerance:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
