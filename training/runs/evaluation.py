"""A run's metrics: measured again on one split, and reported after training.

`evaluate_run` is the work of `python -m training.evaluate` (without
`--dynamic`: that is `training.analysis.dynamic.evaluate_dynamic`);
`training_report` the lines `python -m training.train` prints once a run
has finished.
"""

from training.runs import run_files, runs
from training.tasks import make_task

COMMAND = "python -m training.evaluate"


def evaluate_run(run_dir, split="test"):
    """Returns `(task, metrics)` of the run's best model on `split`.

    The metrics are written to `RUN_DIR/evaluation-SPLIT.json`, unless the
    run is a preset (read-only: its numbers are only returned).
    """
    run = runs.load_run(run_dir)
    task = run.task
    if split not in task.splits:
        raise ValueError(
            f"Unknown split {split!r} for this task; expected one of: "
            f"{', '.join(task.splits)}."
        )
    path = None
    if not runs.read_only(run_dir):  # a preset
        path = runs.check_run(run_dir) / f"evaluation-{split}.json"
        run_files.check_claim(path, COMMAND)  # before the work
    metrics = task.evaluate(run.model, split)
    if path is not None:
        run_files.claim(path, COMMAND)
        runs.write_json(path, metrics)
    return task, metrics


def training_report(recipe, run_dir, metrics):
    """The lines that report a finished `runs.train_run(recipe, run_dir)`
    returning `metrics`: each split's metrics, whether XLA compiled it, the
    training steps per compiled call, and the Keras backend where it is not
    TensorFlow."""
    task = make_task(recipe, vocabulary=runs.load_vocabulary(run_dir))
    lines = [task.report(metrics[split], split) for split in task.splits]
    jit = metrics[runs.JIT_COMPILE]
    lines.append(f"XLA: {'on' if jit['used'] else 'off'} ({jit['reason']})")
    steps = metrics[runs.STEPS_PER_EXECUTION]
    lines.append(f"steps per execution: {steps['used']} ({steps['reason']})")
    if metrics[runs.GROUPED_STEPS]["used"]:
        lines.append(f"grouped steps: {metrics[runs.GROUPED_STEPS]['reason']}")
    backend = metrics[runs.BACKEND]
    if backend["name"] != "tensorflow":
        lines.append(f"Keras backend: {backend['name']} {backend['version']}")
    return lines
