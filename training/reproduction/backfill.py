"""Metrics the evaluation gained after records were written, added to them.

A record (`training.reproduction.records`) keeps the metrics its run
wrote. A metric that needs no model, only what a record holds, is added to
the records from before it here, so a table reads it from every record alike
and `--report` still regenerates REPRODUCTION.md from `results/` alone.
Today that is the Dyck generator's floor (`training.data.dyck_oracle`), for
the records of `task.kind = "dyck"`: each split is generated again from the
record's recipe (deterministic in `train.seed`), checked against the record
(its number of strings and the positions per closing distance behind its
LDPA must be the same), and `DyckTask.evaluate`'s `oracle_metrics` are
computed on it with the record's own cross-entropy. `record.json` lists the keys added
(`backfilled`).

    python -m training.reproduce --backfill [--results DIR]
"""

from pathlib import Path

import numpy as np

from training.runs import runs
from training.tasks import make_task
from training.tasks.dyck import oracle_metrics

RECORD = "record.json"  # as `training.reproduction.records.RECORD`
BACKFILLED = "backfilled"
COMMAND = "python -m training.reproduce --backfill"
ORACLE_KEYS = ("oracle_cross_entropy", "oracle_perplexity", "excess_over_oracle")


def check_same_split(arrays, metrics, where):
    """A one-line `RunError` unless `arrays` are the split `metrics` measured.

    The strings and, per closing distance, the positions behind its LDPA
    (`ldpa_counts`: every position with a non-empty stack) must be the same.
    """
    evaluated = np.asarray(arrays.close_targets) > 0
    counts = np.bincount(np.asarray(arrays.distances)[evaluated])
    regenerated = {str(d): int(n) for d, n in enumerate(counts) if n}
    if len(arrays.inputs) != metrics.get("sequences") or regenerated != metrics.get(
        "ldpa_counts"
    ):
        raise runs.RunError(
            f"{where}: the split generated again from its recipe is not the one "
            "its metrics measured (strings or positions per closing distance "
            "differ); expected the same data, as train.seed generates it"
        )


def dyck_oracle_metrics(recipe, metrics, where="record", task=None):
    """`{split: oracle metrics}` of a Dyck language model's recorded metrics.

    `task`: the recipe's `DyckTask` if one is at hand (its splits generated
    once for records of the same data).
    """
    task = task or make_task(recipe)
    added = {}
    for split in task.splits:
        if split not in metrics:
            continue
        arrays = task.arrays[split]
        check_same_split(arrays, metrics[split], f"{where} {split}")
        oracle = task.oracle(split)
        added[split] = oracle_metrics(oracle, arrays, metrics[split]["cross_entropy"])
    return added


def _data_key(recipe):
    """What a Dyck task's splits depend on: the task table and the seed."""
    return repr((recipe.task, recipe.train.seed))


def backfill(results, report=print):
    """Adds the Dyck oracle's metrics to every record under `results` that lacks them.

    Records of `results/TABLE/ROW/seed-N` whose recipe is a Dyck language
    model (`task.kind = "dyck"`) and whose metrics.json has no
    `oracle_perplexity`. Returns the record folders changed.
    """
    results = Path(results)
    pending = []
    for path in sorted(results.glob(f"*/*/seed-*/{runs.RECIPE}")):
        folder = path.parent
        if not (folder / RECORD).is_file():
            continue
        recipe = runs.read_recipe(path)
        metrics = runs.read_json(folder / runs.METRICS)
        splits = [s for s in ("valid", "test") if isinstance(metrics.get(s), dict)]
        if recipe.task.kind != "dyck" or all(
            "oracle_perplexity" in metrics[s] for s in splits
        ):
            continue
        pending.append((_data_key(recipe), folder, recipe, metrics))
    changed, task, key = [], None, None
    for data_key, folder, recipe, metrics in sorted(pending, key=lambda p: p[:2]):
        if data_key != key:  # one data set at a time: they are large
            task, key = make_task(recipe), data_key
        where = folder.relative_to(results).as_posix()
        added = dyck_oracle_metrics(recipe, metrics, where, task=task)
        keys = []
        for split, values in added.items():
            metrics[split].update(values)
            keys += [f"{split}.{name}" for name in values]
        record = runs.read_json(folder / RECORD)
        record[BACKFILLED] = {"keys": sorted(keys), "by": COMMAND}
        runs.write_json(folder / runs.METRICS, metrics)
        runs.write_json(folder / RECORD, record)
        changed.append(folder)
        test = added.get("test", {})
        report(
            f"{where}: test oracle perplexity {test.get('oracle_perplexity', 0):.4f}, "
            f"excess {test.get('excess_over_oracle', 0):.4f} nats/token"
        )
    return changed
