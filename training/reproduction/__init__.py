"""The reproduction floor: the papers' tables over seeds, and the presets.

A table file of `training/tables/` (`table_schema`) names rows of recipes
and the paper's numbers; `table_runs` plans, shards and trains its runs,
`table_sweep` is what `python -m training.reproduce` runs, `records` keeps
each run's record in results/ and regenerates REPRODUCTION.md's sections,
`table_summary` and `table_baselines` turn records into means, verdicts and
rule rows (`history` reads a run's per-epoch log), `backfill` adds metrics
to old records, and `preset_builder` makes a preset of a recorded run. It
stands on `training.runs`; the analyses and the commands stand on it.
"""
