"""`ZooModel`: what every zoo model class shares, whichever door it came in by.

The zoo's models are classes (`zoo.LanguageModel`, `zoo.Recognizer`,
`zoo.Tagger`, `zoo.Classifier`, `zoo.DyckRNN`), as keras-hub's task models
are: each a functional `keras.Model` subclass whose constructor arguments are
its config (`get_config`, `from_config`), registered under the package
`"zoo"`, with its parts as attributes. Their behaviour is theirs, not patched
onto an instance after building, so a model built now, one rebuilt from its
config and one loaded from a `.keras` file (`keras.saving.load_model`, which
calls `from_config`) are the same model and train at the same speed:

- the recurrent layers are `zoo.RNN` (the zoo's TensorFlow loop);
- `make_train_function` groups training steps in one XLA call on
  TensorFlow (`zoo.tensorflow_steps`);
- on JAX a stateful model's recurrent state is carried through the
  compiled steps (`carry_state_on_jax`).

The parts each class declares (`token_embedding`, `recurrent_layers`,
`heads`) are read by role, never by a layer's name or index
(`zoo.model_parts`). A model's graph is flat, one layer per part under the
names and classes the builders have always given, so the weight files of
every earlier run load into it (`model.load_weights`).
"""

import inspect

import keras

from zoo import keras_compat
from zoo.tensorflow_steps import grouped_train_function, groups_steps
from zoo.walk import walk_layers


def carry_state_on_jax(model):
    """Makes compiled steps on JAX carry `model`'s stateful recurrent state.

    Keras 3.15's `keras.layers.RNN` creates its `states` variables untracked
    (`_create_state_variables` runs under `no_automatic_dependency_tracking`),
    so they are not among `model.non_trainable_variables`. TensorFlow's
    compiled steps read and assign them in place anyway; JAX's are pure
    functions of the variables Keras passes in, so `fit`, `evaluate` and
    `predict` read a stateful layer's state as the constant it was when the
    step was traced (zeros) and drop its update: every batch starts from zero.
    Each state variable is listed where Keras lists seed-generator state
    (`keras_compat.carry_variable`): among the layer's `variables` (and so
    passed through every step), not its `weights` (so `get_weights`, `.keras`
    files and checkpoints are those of the stateless model). Nothing changes
    on other backends. Can go when Keras tracks RNN state itself (no upstream
    issue found as of 2026-10).
    """
    if keras.backend.backend() != "jax":
        return model
    for layer in walk_layers(model):
        states = (
            getattr(layer, "states", None)
            if getattr(layer, "stateful", False)
            else None
        )
        if not states:
            continue
        for variable in keras.tree.flatten(states):
            keras_compat.carry_variable(layer, variable)
    return model


class ZooModel(keras.Model):
    """The base of the zoo's model classes (module docstring).

    A subclass builds its graph in `__init__` and calls
    `super().__init__(inputs, outputs, name=...)`, then sets its parts
    (`token_embedding`, `recurrent_layers`, and `heads`: `{output name: the
    layer that gives it}`), and keeps each constructor argument as the
    attribute of its name. `config_keys`, its constructor's named arguments,
    is read from the signature: `get_config` returns them, `from_config`
    passes them back to the constructor.
    """

    config_keys = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:  # the arguments of its own constructor
            parameters = inspect.signature(cls.__init__).parameters.values()
            cls.config_keys = tuple(
                p.name
                for p in list(parameters)[1:]
                if p.kind is p.POSITIONAL_OR_KEYWORD
            )

    def __init__(self, inputs, outputs, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        carry_state_on_jax(self)

    def make_train_function(self, force=False):
        if keras.backend.backend() != "tensorflow":
            return super().make_train_function(force=force)
        if self.train_function is not None and not force:
            return self.train_function
        super().make_train_function(force=True)
        if groups_steps(self):
            self.train_function = grouped_train_function(self, self.train_function)
        return self.train_function

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable}
        for key in self.config_keys:
            value = getattr(self, key)
            config[key] = dict(value) if isinstance(value, dict) else value
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)

    def serving_endpoints(self, tokenizer, start_id=None):
        """The SavedModel endpoints of this model: `{name: (function, signature)}`.

        `serve`, `serve_text` and `serve_text_unk` (`zoo.serving`), the text
        read after `start_id` where the task has one and scored by
        `text_outputs`. The hook where a class adds its own: override, call
        `super().serving_endpoints(tokenizer, start_id)` and add entries.
        """
        from zoo import serving

        return serving.endpoints(self, tokenizer, start_id)

    generates = False  # whether it samples text (a language model does)

    def step_outputs(self, outputs):
        """What `serve_step` gives for one step's `outputs` (each class says)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no step to stream; expected a model that "
            "reads one token a step (a language model, recognizer, tagger or "
            "Dyck-RNN)."
        )

    def text_outputs(self, ids, start_id=None):
        """What `serve_text` gives for ragged token `ids` `(batch, tokens)`.

        Each class says (`zoo.serving`); a dict of tensors with `lengths`.
        """
        raise NotImplementedError(
            f"{type(self).__name__} defines no text_outputs; expected a zoo model "
            "class (zoo.LanguageModel, ...) that serves text."
        )

    @classmethod
    def from_preset(cls, name_or_dir):
        """The model of a built-in preset (by name), a preset folder or a run directory.

        As keras-hub's `from_preset`: `zoo.LanguageModel.from_preset(
        "mlstm_ptb_char")` is the trained model, uncompiled, of this class
        (a preset of another class is refused in one line; `ZooModel`
        takes any). It reads the folder's `best.keras`
        (`zoo.presets.PresetLoader`); `zoo.from_preset(name)` gives its
        tokenizer, recipe and card beside it.
        """
        from zoo.presets import preset_loader

        return preset_loader.PresetLoader(name_or_dir).load_model(expected=cls)

    def save_to_preset(self, directory, tokenizer=None):
        """Writes this model as a preset into `directory`; returns the folder.

        `best.keras` and `preset.json` (its format version and class), and
        `vocabulary.json` given a `zoo.tokenizer.Tokenizer`: what
        `from_preset` reads back (`zoo.presets.save_preset`).
        """
        from zoo.presets import preset_loader

        return preset_loader.save_preset(self, directory, tokenizer)
