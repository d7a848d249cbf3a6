"""What every task kind's options share: `TaskOptions`.

Each task kind declares its `task` section as a frozen dataclass subclass
of `TaskOptions`, beside its task class (`training.tasks`), with:

- `kind`: its name in recipes (`task.kind`), the key of the registry
  `training.tasks.TASKS`;
- `model_arguments`: the class of its builder's arguments, the recipe's
  `model` section (`training.core.config.model_arguments`);
- `train_options`: the training options of `train_options.KIND_OPTIONS`
  it trains with (a curriculum, a stateful model); every other kind keeps
  their defaults;
- its fields, made with `option_fields.option`, and `check(recipe)`, its
  own combinations with the rest of the recipe;
- `summary()`: what its model does, in a few words (a preset's card);
- `model_defaults(model)`: values of `model` keys left unset (None) that
  follow from the task (the Dyck-RNN's `units` from `task.m`).
"""

from typing import ClassVar


class TaskOptions:
    """The options of a task kind (subclasses are frozen dataclasses)."""

    kind: ClassVar[str]
    model_arguments: ClassVar[type]
    train_options: ClassVar[frozenset] = frozenset()

    def check(self, recipe):
        """A one-line `RecipeError` if the kind's options do not go with `recipe`."""

    def summary(self):
        """What the kind's model does, in a few words."""
        raise NotImplementedError

    def model_defaults(self, model):
        """`{key: value}` of the `model` section's keys that follow from the task."""
        return {}
