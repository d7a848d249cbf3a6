"""A zoo model's parts by role: `model_parts(model)` -> `ModelParts`.

Every zoo model class (`zoo.ZooModel`) keeps its parts as attributes, as
keras-hub's models do (`backbone.token_embedding`); `model_parts` gathers
the ones every class has:

- `embedding`: `model.token_embedding`, the `keras.layers.Embedding` the
  token ids go through (`keras.layers.ReversibleEmbedding` in a language
  model), or None where the cell reads the ids itself (`tensor_rnn`,
  `dyck_rnn`);
- `recurrent`: `model.recurrent_layers`, bottom first (`zoo.RNN`, a cell's
  own sequence layer such as `MinGRU`, or `keras.layers.Bidirectional` over
  one);
- `heads`: `model.heads`, `{output name: the layer that gives it}` in
  `model.output_names` order (a recognizer's `"accept"` and
  `"next_symbol"`; one head in the others: the logits' `Dense`, a tied
  decoder's float32 cast, the Dyck-RNN's `DyckReadout`).

Example:

>>> parts = model_parts(zoo.recognizer("lstm", vocab_size=7, units=8, num_layers=2))
>>> [layer.name for layer in parts.recurrent], sorted(parts.heads)
(['recurrent', 'recurrent_1'], ['accept', 'next_symbol'])
"""

from typing import NamedTuple

from zoo.zoo_model import ZooModel


class ModelParts(NamedTuple):
    """The parts of a zoo model by role: see the module docstring."""

    embedding: object
    recurrent: tuple
    heads: dict

    @property
    def head(self):
        """The model's one head; a one-line `ValueError` where it has several."""
        if len(self.heads) != 1:
            raise ValueError(
                f"Expected a model with one head; this one has {len(self.heads)} "
                f"({', '.join(self.heads)}): read `heads[name]`."
            )
        (layer,) = self.heads.values()
        return layer


def model_parts(model):
    """The `ModelParts` of a zoo model (built, rebuilt or loaded).

    A one-line `ValueError` for anything else, such as a plain functional
    `keras.Model`.
    """
    if not isinstance(model, ZooModel):
        raise ValueError(
            "Expected a zoo model (zoo.LanguageModel, zoo.Recognizer, zoo.Tagger, "
            f"zoo.Classifier, zoo.DyckRNN); received {type(model).__name__}."
        )
    heads = {name: model.heads[name] for name in model.output_names}
    return ModelParts(model.token_embedding, tuple(model.recurrent_layers), heads)
