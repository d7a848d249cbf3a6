"""Presets from finished runs: the files, the card, the re-measurement.

`save_preset` turns a finished run directory into a preset (`zoo.presets`
describes its files) with a card: the retraining command (`retrain_command`,
a table row's when the run is one of its seeds), the metric to re-measure
and its tolerance. `remeasure` measures a preset's card metric again, on
freshly generated data of the same distribution for Dyck and recognition
tasks (the data seed `FRESH_SEED`), on the corpus's test split for a
language model. `python -m training.preset` is their command.
"""

import json
import math
import shlex
import shutil
from pathlib import Path

# Data seed of a re-measurement: no table trains with it.
FRESH_SEED = 1_000_003
# Fresh test strings a Dyck preset is re-measured on.
FRESH_SEQUENCES = 1_000
# Per task kind: the metric a card re-measures by default.
REMEASURED = {
    "closing_bracket": "test.wcpa",
    "dyck": "test.wcpa",
    "recognition": "test.strict",
    "language_model": "test.bits_per_token",
    "dyck_depth": "test.accuracy",
    "acceptability": "test.accuracy",
}
# The kinds whose data are read, not generated: re-measured on the same split.
READ_DATA = ("language_model", "acceptability")
# The kinds re-measured on fresh Dyck strings (`FRESH_SEQUENCES` of them).
DYCK_KINDS = ("dyck", "closing_bracket", "dyck_depth")
MIN_TOLERANCE = 0.005
# Recipe keys that are words about the model, not settings of it.
WORDS = {("description",), ("source",)}


def retrain_command(recipe, table=None, row=None):
    """The `python -m training.train` command (a list) that trains `recipe` again.

    With a table and row: the row's recipe, overrides and scale with
    `train.seed`, checked to resolve to `recipe` (a `RecipeError` naming
    the first key that differs otherwise). Without: the recipe's name and
    scale with one override per setting that differs from the recipe file,
    the seed always included; None when the run was trained from a recipe
    file outside `training/recipes/`.
    """
    from training.tasks import recipes

    seed = f"train.seed={recipe.train.seed}"
    if row is not None:
        name, scale = row.recipe, row.scale
        overrides = [*row.overrides, seed]
    elif recipe.name in recipes.available_recipes():
        name, scale = recipe.name, recipe.scale
        base = recipes.resolve(name, scale)
        overrides = [
            _override(path, value)
            for path, value in _differences(base, recipe)
            if path not in {*WORDS, ("name",), ("scale",), ("train", "seed")}
        ] + [seed]
    else:
        return None
    resolved = recipes.resolve(name, scale, overrides)
    different = [d for d in _differences(resolved, recipe) if d[0] not in WORDS]
    if different:
        path, value = different[0]
        where = f"table {table.name!r} row {row.name!r}" if row else f"recipe {name!r}"
        raise recipes.RecipeError(
            f"The run's recipe is not {where} at its seed: "
            f"{'.'.join(path)} is {value!r} in the run, "
            f"{_at(resolved, path)!r} there."
        )
    return ["python", "-m", "training.train", name, *overrides, "--scale", scale]


def _differences(base, recipe):
    """`[(path, value)]` where `recipe` differs from `base` (options whole)."""
    return _table_differences(base.to_dict(), recipe.to_dict())


def _table_differences(base, tables, prefix=()):
    found = []
    for key in sorted(set(base) | set(tables)):
        path, value = (*prefix, key), tables.get(key)
        if isinstance(value, dict) and key != "options":
            found += _table_differences(base.get(key, {}), value, path)
        elif value != base.get(key):
            found.append((path, value))
    return found


def _at(recipe, path):
    tables = recipe.to_dict()
    for key in path:
        tables = tables.get(key) if isinstance(tables, dict) else None
    return tables


def _override(path, value):
    """`section.key=value` that `training.tasks.recipes.parse_override` reads back."""
    text = value if isinstance(value, str) else json.dumps(value)
    if isinstance(value, str):
        try:
            json.loads(value)
            text = json.dumps(value)  # would parse as JSON: keep it a string
        except json.JSONDecodeError:
            pass
    return f"{'.'.join(path)}={text}"


def tolerance_for(value, count, fresh_count):
    """Three standard errors of the difference of two measured fractions.

    `value` measured on `count` strings and again on `fresh_count` fresh
    ones; at least `MIN_TOLERANCE`, rounded up to 3 decimals.
    """
    spread = math.sqrt(value * (1 - value) * (1 / count + 1 / fresh_count))
    return max(MIN_TOLERANCE, math.ceil(3 * spread * 1000) / 1000)


def remeasure_plan(recipe, metrics, key, tolerance=None):
    """The card's `remeasure` entry for the metric `key` of a run's `metrics`."""
    from training.reproduction import table_schema
    from training.runs import runs

    value = table_schema.metric_value(metrics, key)
    if value is None:
        splits = ", ".join(sorted(k for k in metrics if k not in runs.EXECUTION))
        raise ValueError(
            f"The run's metrics.json has no number at {key!r}; expected "
            f"SPLIT.NAME with SPLIT one of: {splits}."
        )
    split = key.split(".")[0]
    kind = recipe.task.kind
    plan = {"metric": key, "value": value, "fresh_data": kind not in READ_DATA}
    if plan["fresh_data"]:
        plan["data_seed"] = FRESH_SEED
        count = metrics[split].get("sequences", metrics[split].get("strings"))
        fresh = FRESH_SEQUENCES if kind in DYCK_KINDS else count
        if kind in DYCK_KINDS:
            plan["sequences"] = fresh
        if tolerance is None and 0 <= value <= 1:
            tolerance = tolerance_for(value, count, fresh)
    plan["tolerance"] = MIN_TOLERANCE if tolerance is None else tolerance
    return plan


def fresh_recipe(recipe, plan):
    """`recipe` made to generate the data a card's metric is re-measured on."""
    if not plan["fresh_data"]:
        return recipe
    values = {"train.seed": plan["data_seed"]}
    if "sequences" in plan:  # Dyck: only the test split is used, at this size
        values.update(
            {
                "task.train_sequences": 1,
                "task.dev_sequences": 1,
                "task.test_sequences": plan["sequences"],
            }
        )
    return recipe.with_values(values)


def remeasure(preset):
    """Measures a preset's card metric again; returns `(value, card's plan)`.

    `preset` is a built-in name or a preset directory. Dyck and recognition
    presets are measured on fresh data of their recipe's distribution
    (`fresh_recipe`); a language model and the acceptability classifier on
    their data's split.
    """
    import zoo
    from training.core import card_schema, file_schema
    from training.reproduction import table_schema
    from training.runs import runs
    from training.tasks import make_task

    directory = zoo.presets.preset_dir(preset)
    card_path = directory / zoo.presets.preset_loader.CARD
    card = file_schema.check(zoo.preset_card(directory), card_schema.CARD, card_path)
    plan = card["remeasure"]
    run = runs.load_run(directory)
    task = make_task(fresh_recipe(run.recipe, plan), vocabulary=run.task.vocabulary)
    split = plan["metric"].split(".")[0]
    if split not in task.splits:
        raise ValueError(
            f"{str(card_path)!r}: remeasure.metric {plan['metric']!r} names no "
            f"split of the task; expected SPLIT.NAME with SPLIT one of: "
            f"{', '.join(task.splits)}."
        )
    metrics = {split: task.evaluate(run.model, split)}
    value = table_schema.metric_value(metrics, plan["metric"])
    if value is None:
        raise ValueError(
            f"{str(card_path)!r}: remeasure.metric {plan['metric']!r} is no number "
            f"the task measures; expected one of: {', '.join(metrics[split])}."
        )
    return value, plan


def save_preset(
    run_dir, path, name=None, table=None, row=None, metric=None, tolerance=None
):
    """Writes the preset of a finished run to `path`; returns its card.

    The model is the run's best, rebuilt in float32 from the recipe and
    saved without its optimizer; `vocabulary.json` (the tokenizer),
    `recipe.json` (the config) and `metrics.json` are the run's;
    `card.json` (metadata only: no copy of the recipe or the metrics) and
    `README.md` describe it.
    The run must be finished (`run_dirs.check_finished`: its metrics and
    model describe one model; a run trained again meanwhile is refused).
    The preset is written into a folder of this process's own beside `path`
    (`run_dirs.scratch_beside`; a folder named `PATH.partial` is never
    touched) and moved into place; an existing `path` is replaced only when
    it is empty or a preset (it holds `card.json`), anything else is a
    `ValueError`. Nothing is written when the run, the table row or the
    metric is refused.

    Args:
        run_dir: A finished run directory (or `preset:NAME`).
        path: The preset's directory.
        name: The preset's name. Default: the last part of `path`.
        table, row: The reproduction table (a name or `.toml` path) and row
            the run is a seed of; both or neither.
        metric: The `SPLIT.NAME` the card re-measures. Default: `REMEASURED`
            of the run's task kind.
        tolerance: The absolute tolerance of that re-measurement. Default:
            three standard errors of the difference of two measurements
            (`tolerance_for`), at least `MIN_TOLERANCE`.
    """
    import keras
    import tensorflow as tf

    import zoo
    from training.core import file_schema, interrupts
    from training.reproduction import preset_readme, table_schema
    from training.runs import run_dirs, run_files, runs
    from zoo.checks import check_number

    path = Path(path)
    run_files.check_target(path, "preset target")
    name = name or path.name
    if tolerance is not None:
        check_number("tolerance", tolerance, low=0, low_open=True)
    if (table is None) != (row is None):
        raise ValueError("--table and --row go together; received only one.")
    if path.exists() and not path.is_dir():
        raise ValueError(f"Preset target {str(path)!r} is a file; expected a folder.")
    card_path = path / zoo.presets.preset_loader.CARD
    if path.is_dir() and any(path.iterdir()) and not card_path.exists():
        raise ValueError(
            f"Preset target {str(path)!r} is a non-empty folder that is not a "
            "preset; expected a new or empty folder."
        )
    source = runs.check_run(
        run_dir, needs=(runs.RECIPE, runs.VOCABULARY, runs.BEST, runs.METRICS)
    )
    run_dirs.check_finished(source)
    stamp = run_dirs.stamp(source)
    recipe = runs.read_recipe(source / runs.RECIPE)
    metrics = runs.read_json(source / runs.METRICS)
    file_schema.check(metrics, file_schema.METRICS, source / runs.METRICS)
    table_entry = None
    if table is not None:
        table = table_schema.load_table(table)
        (row,) = table_schema.select_rows(table, [row])
        table_entry = {
            "name": table.name,
            "title": table.title,
            "row": row.name,
            "paper": row.paper,
            "note": row.note,
        }
    command = retrain_command(recipe, table, row)
    plan = remeasure_plan(
        recipe, metrics, metric or REMEASURED[recipe.task.kind], tolerance
    )
    run = runs.load_run(source, precision="float32")
    partial = run_dirs.scratch_beside(path, "preset target")
    try:
        with interrupts.remembered():  # a Ctrl-C Python drops still stops it
            _write_run_files(source, partial, run, recipe)
            trainable = sum(math.prod(w.shape) for w in run.model.trainable_weights)
            card = {
                "name": name,
                # A table row's recipe file describes its default cell, not the row's.
                "description": recipe.description
                if table_entry is None
                else f"{table_entry['title']}, row {table_entry['row']}",
                "task": recipe.task.summary(),
                "cell": recipe.model.cell,
                "command": None if command is None else shlex.join(command),
                "seed": recipe.train.seed,
                "table": table_entry,
                "parameters": {
                    "total": run.model.count_params(),
                    "trainable": trainable,
                },
                "size_bytes": (partial / runs.BEST).stat().st_size,
                "remeasure": plan,
                "versions": {"keras": keras.__version__, "tensorflow": tf.__version__},
            }
            baseline = run.task.trivial_baseline()
            if baseline is not None:
                card["baseline"] = baseline
            sample = run.task.card_sample  # read once: it reads the data
            if sample is not None:
                card["sample"] = card_sample(source, sample)
            runs.write_json(partial / zoo.presets.preset_loader.CARD, card)
            readme = preset_readme.model_card(card, recipe, metrics)
            (partial / zoo.presets.preset_loader.README).write_text(readme)
            if run_dirs.stamp(source) != stamp:  # trained again while read
                raise runs.RunError(
                    f"Run directory {str(source)!r} changed while it was read (a "
                    "re-run finished); expected a finished run: run the command again."
                )
            interrupts.raise_if_noted()
        run_dirs.replace_folder(partial, path, _is_preset, "preset target")
    finally:
        shutil.rmtree(partial, ignore_errors=True)  # left when not moved in
    return card


def card_sample(run_dir, plan):
    """`plan` (`Task.card_sample`) with the text the run's model writes,
    drawn by the compiled sampler as `python -m training.generate` draws it."""
    from training.runs import generation

    text = generation.generate(
        run_dir,
        plan["prompt"],
        plan["length"],
        temperature=plan["temperature"],
        seed=plan["seed"],
    )
    return {**plan, "text": text}


def _is_preset(folder):
    import zoo

    return (Path(folder) / zoo.presets.preset_loader.CARD).is_file()


def _write_run_files(source, partial, run, recipe):
    """The model (float32, no optimizer; with `preset.json`, its format),
    recipe, vocabulary and metrics.

    The vocabulary names the text conventions its tokenizer reads in (a
    run's null, not a text, as the text as written at its level), which
    `zoo.from_preset(...).tokenizer` reads.
    """
    from training.runs import runs

    run.model.save_to_preset(partial)  # best.keras and preset.json
    runs.write_json(partial / runs.RECIPE, recipe.to_dict())
    run.task.vocabulary.conventions = run.tokenizer.conventions
    (partial / runs.VOCABULARY).write_text(run.task.vocabulary.to_json())
    shutil.copyfile(source / runs.METRICS, partial / runs.METRICS)
