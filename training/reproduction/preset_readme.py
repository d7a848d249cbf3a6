"""A preset's README.md: its card as Markdown (`model_card`), and the
one line the commands print of a card (`headline`).

`training.reproduction.preset_builder.save_preset` writes the card and
this page beside the preset's files.
"""

import shlex


def sample_command(card):
    """The `training.generate` command that draws a card's sample again."""
    sample = card["sample"]
    return shlex.join(
        [
            "python",
            "-m",
            "training.generate",
            f"preset:{card['name']}",
            "--prompt",
            sample["prompt"],
            "--length",
            str(sample["length"]),
            "--temperature",
            f"{sample['temperature']:g}",
            "--seed",
            str(sample["seed"]),
        ]
    )


def _splits(metrics):
    """The splits of a run's `metrics`, without how it executed its steps."""
    from training.runs import runs

    return {
        k: v for k, v in metrics.items() if k not in (*runs.EXECUTION, runs.BACKEND)
    }


def headline(card):
    """The re-measured metric as measured, e.g. `test.wcpa 1.0000`."""
    plan = card["remeasure"]
    return f"{plan['metric']} {plan['value']:.4f} (tolerance {plan['tolerance']:g})"


def _paper_value(value):
    """A table row's paper number: `99.5`, or `{"best": 99.5}` as `best 99.5`."""
    if isinstance(value, dict):
        return ", ".join(f"{kind} {number:g}" for kind, number in value.items())
    return f"{value:g}"


def model_card(card, recipe, metrics):
    """The card as Markdown (the preset's README.md), with the units of the
    run's `recipe` and the table of its `metrics` (metrics.json's)."""
    parameters = card["parameters"]
    lines = [
        f"# {card['name']}",
        "",
        card["description"],
        "",
        f"- Task: {card['task']}",
        f"- Cell: `{card['cell']}`, {recipe.model.units} units; "
        f"{parameters['total']:,} parameters ({parameters['trainable']:,} "
        "trainable)",
        f"- Seed: {card['seed']}",
        f"- Model file: `best.keras`, {card['size_bytes']:,} bytes",
    ]
    if card["table"]:
        table = card["table"]
        paper = ", ".join(
            f"{key} {_paper_value(value)}" for key, value in table["paper"].items()
        )
        lines.append(
            f"- Table: `{table['name']}` ({table['title']}), row `{table['row']}`; "
            f"the paper's numbers: {paper or 'none'}"
        )
    split, key = card["remeasure"]["metric"].split(".", 1)
    if key in card.get("baseline", {}).get(split, {}):
        baseline = card["baseline"]
        lines.append(
            f"- Trivial baseline on the same split: {baseline['name']}, "
            f"k = {baseline['k']:g}: {split}.{key} {baseline[split][key]:.4f} "
            f"against this model's {card['remeasure']['value']:.4f}"
        )
    lines += ["", "## Metrics as measured after training", ""]
    lines += ["| split | metric | value |", "|---|---|---|"]
    for split, values in _splits(metrics).items():
        for key, value in values.items():
            if isinstance(value, int):
                lines.append(f"| {split} | {key} | {value:,} |")
            elif isinstance(value, float):
                lines.append(f"| {split} | {key} | {value:.4f} |")
    if "sample" in card:
        sample = card["sample"]
        lines += [
            "",
            "## A sample",
            "",
            f'{sample["length"]} tokens after "{sample["prompt"]}" at temperature '
            f"{sample['temperature']:g}, seed {sample['seed']}, from the compiled "
            f"sampler (`zoo.generate`); the test score above is "
            f"`{card['remeasure']['metric']}` {card['remeasure']['value']:.4f}:",
            "",
            "```text",
            sample["text"],
            "```",
            "",
            "The same text again:",
            "",
            "```bash",
            sample_command(card),
            "```",
        ]
    plan = card["remeasure"]
    where = (
        f"{plan.get('sequences', 'as many')} fresh strings (data seed "
        f"{plan['data_seed']})"
        if plan["fresh_data"]
        else "the corpus's split again"
    )
    lines += [
        "",
        "## Re-measuring",
        "",
        f"`{plan['metric']}` was {plan['value']:.4f}; on {where} it is expected "
        f"within ±{plan['tolerance']:g} of that:",
        "",
        "```bash",
        f"python -m training.preset --remeasure {card['name']}",
        "```",
        "",
        "## Retraining",
        "",
    ]
    if card["command"]:
        lines += ["```bash", card["command"], "```"]
    else:
        lines.append(
            "Trained from a recipe file outside training/recipes/; "
            "`recipe.json` holds every setting."
        )
    lines += [
        "",
        "## Loading",
        "",
        "```python",
        "import zoo",
        "",
        f'preset = zoo.from_preset("{card["name"]}")  # or a path to this folder',
        "preset.model, preset.tokenizer, preset.config, preset.card",
        "```",
        "",
        f"Every CLI that reads a run reads it as `preset:{card['name']}`, e.g. "
        f"`python -m training.evaluate preset:{card['name']} --split test`.",
        "",
    ]
    return "\n".join(lines)
