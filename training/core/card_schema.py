"""The schema of a preset's card.json (`training.core.file_schema`'s pieces).

Written by `training.reproduction.preset_builder.save_preset`, read back by
its `remeasure` and the tests of every built-in preset.
"""

from training.core.file_schema import (
    MEASURE_RANGES,
    Either,
    Flag,
    Mismatch,
    Null,
    Number,
    Table,
    Text,
    at,
)

PAPER_VALUE = Either(
    Number(),
    Table({"mean": Number(), "best": Number()}, nonempty=True),
    expected="a finite number or a table of mean and/or best",
)


class _Remeasure(Table):
    """A card's plan: fresh data is drawn with its `data_seed`."""

    def check(self, value, where):
        value = super().check(value, where)
        name = value["metric"].rpartition(".")[2]
        Number(*MEASURE_RANGES.get(name, ())).check(value["value"], at(where, "value"))
        if value["fresh_data"] and "data_seed" not in value:
            raise Mismatch(
                where,
                None,
                message=f"{where} has no 'data_seed'; expected an integer >= 0 "
                "with fresh_data true",
            )
        return value


REMEASURE = _Remeasure(
    {
        "metric": Text(),
        "value": Number(),
        "fresh_data": Flag(),
        "data_seed": Number(0, integer=True),
        "sequences": Number(1, integer=True),
        "tolerance": Number(0, low_open=True),
    },
    required=("metric", "value", "fresh_data", "tolerance"),
)
# Metadata only: the recipe and the metrics are the preset's recipe.json and
# metrics.json beside it (a card that copies them is refused); its recipe is
# checked when it loads, as a run's is (`training.runs.runs.load_run`).
_CARD_KEYS = {
    "name": Text(),
    "description": Text(),
    "task": Text(),
    "cell": Text(),
    "command": Text(nullable=True),
    "seed": Number(0, integer=True),
    "table": Either(
        Null(),
        Table(
            {
                "name": Text(),
                "title": Text(),
                "row": Text(),
                "paper": Table(others=PAPER_VALUE),
                "note": Text(),
            }
        ),
        expected="null or an object of name, title, row, paper and note",
    ),
    "parameters": Table(
        {"total": Number(0, integer=True), "trainable": Number(0, integer=True)}
    ),
    "size_bytes": Number(0, integer=True),
    "remeasure": REMEASURE,
    # what a rule scores on the same splits (`Task.trivial_baseline`)
    "baseline": Table(
        {
            "name": Text(),
            "order": Number(1, integer=True),
            "k": Number(0, low_open=True),
            "valid": Table(others=Number()),
            "test": Table(others=Number()),
        },
        required=("name", "test"),
    ),
    # what the model writes (`Task.card_sample`), drawn by the compiled sampler
    "sample": Table(
        {
            "prompt": Text(),
            "length": Number(0, integer=True),
            "temperature": Number(0, low_open=True),
            "seed": Number(0, integer=True),
            "text": Text(),
        },
        required=("prompt", "length", "temperature", "seed", "text"),
    ),
    "versions": Table(others=Text()),
}
OPTIONAL_CARD_KEYS = ("baseline", "sample")
CARD = Table(
    _CARD_KEYS, required=tuple(k for k in _CARD_KEYS if k not in OPTIONAL_CARD_KEYS)
)
