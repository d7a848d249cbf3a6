"""Typed recipes: each section a frozen dataclass, read by one generic loader.

A recipe (`recipe_loader.Recipe`) has three sections, each owned by what it
configures:

- `task`: the task kind's own options, a frozen dataclass each kind
  declares beside its task class (`training.tasks`: `DyckOptions`,
  `RecognitionOptions`, ...; `task_options.TaskOptions` is what they share);
- `model`: the arguments of the zoo builder the kind calls
  (`model_arguments`: `zoo.language_model`'s, `zoo.recognizer`'s, ...);
- `train`: the training options, one dataclass for every kind
  (`train_options.TrainOptions`), read by the fit path.

Each field is made with `option_fields.option`: its default, and where its
type does not say enough, its range or choices; each section checks its own
combinations (`check`). `recipe_loader` turns tables (a recipe file's TOML,
a run's `recipe.json`) and `section.key=value` overrides into a `Recipe`,
refusing an unknown key or a bad value in one line; `training.tasks.recipes` binds
it to the registry of task kinds (`training.tasks.TASKS`).
"""
