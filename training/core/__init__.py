"""The core floor: what a task and a fit are made of.

The recipe's typed sections (`config`) and its files (`recipe_files`,
`file_schema`), metrics and compiled scoring (`metrics`, `compiled`,
`scoring`), callbacks, the protocol of what the fit path needs from a task
(`task_protocol`) and that path itself (`compile_mode`, `sampled_softmax`,
`fitting`), the Keras backend (`backends`) and the figures' common setup
(`plots`). Nothing here knows a task kind, a run directory or a table:
`training.tasks`, `training.runs.runs` and `training.reproduction` stand on it.
"""
