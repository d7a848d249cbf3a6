"""Recognition models on fresh hard tests, beside the rules that need no training.

    PYTHONPATH=. python docs/experiments/hard_against_rules.py [RUN_DIR_OR_PRESET ...]

For each recognition preset (default: every built-in one whose recipe's task
kind is recognition; or the run directories and `preset:NAME`s given): strict
accuracy on fresh near-miss strings, the `hard` (lengths 56-102) and
`hard_long` (103-160) splits of `training.data.one_edit` generated with the
data seed the presets are re-measured with
(`training.reproduction.preset_builder.FRESH_SEED`), and on the same strings
the rules of the recognition tables (`training.reproduction.table_baselines`:
counting for Dyck, centre marker for palindromes, and majority class).
Half of a hard split is positives, half negatives one edit from a positive,
so a model must beat the counting rule there to show that it uses its
stack's order, not only a count. The last column is the model's margin over
the language's own rule on `hard`, in points.
"""

import sys

import zoo
from training.reproduction import preset_builder, table_baselines
from training.runs import runs
from training.tasks import make_task

SPLITS = ("hard", "hard_long")
PLAN = {"fresh_data": True, "data_seed": preset_builder.FRESH_SEED}


def recognition_presets():
    return [
        f"preset:{name}"
        for name in zoo.presets.available()
        if zoo.presets.PresetLoader(name).config()["task"]["kind"] == "recognition"
    ]


def measure(where):
    run = runs.load_run(where)
    recipe = preset_builder.fresh_recipe(run.recipe, PLAN)
    task = make_task(recipe, vocabulary=run.task.vocabulary)
    model = {split: task.evaluate(run.model, split)["strict"] for split in SPLITS}
    setting = (
        recipe.task.language,
        recipe.task.split_scale,
        recipe.task.hard_negatives,
    )
    rules = table_baselines.rule_metrics(*setting, PLAN["data_seed"])
    own = table_baselines.rules_of(recipe.task.language)[-1]
    found = {rule: {s: rules[rule][s]["strict"] for s in SPLITS} for rule in rules}
    return recipe.task.language, model, own, found


print(
    "| model | language | hard 56-102 | hard 103-160 | rule | rule, hard 56-102 "
    "| rule, hard 103-160 | majority class, hard | margin (points) |"
)
print("|---|---|---|---|---|---|---|---|---|")
for where in sys.argv[1:] or recognition_presets():
    language, model, own, rules = measure(where)
    margin = 100 * (model["hard"] - rules[own]["hard"])
    print(
        f"| {where} | {language} | {model['hard']:.3f} | {model['hard_long']:.3f} "
        f"| {own} | {rules[own]['hard']:.3f} | {rules[own]['hard_long']:.3f} "
        f"| {rules['majority class']['hard']:.3f} | {margin:+.1f} |"
    )
