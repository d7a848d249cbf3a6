"""A zoo model's parts, found by the role each layer plays in it.

Every zoo builder makes the same backbone (`zoo.backbone`) and puts heads on
it; `model_parts(model)` gives back its `ModelParts`:

- `embedding`: the `keras.layers.Embedding` the token ids go through
  (`keras.layers.ReversibleEmbedding` in a language model), or None where
  the cell reads the ids itself (`tensor_rnn`, `dyck_rnn`);
- `recurrent`: the recurrent layers, bottom first (`keras.layers.RNN`, a
  cell's own sequence layer such as `MinGRU`, or `keras.layers.Bidirectional`
  over one);
- `heads`: `{output name: the layer that gives it}` in `model.output_names`
  order (a recognizer's `"accept"` and `"next_symbol"`; one head, `head`, in
  the others: the logits' `Dense`, a tied decoder's float32 cast, the
  Dyck-RNN's `DyckReadout`).

Each part is found by what it is (its Keras class, which a `.keras` file
records) and by which outputs it gives, never by its name, so the same call
serves a model built now and one loaded from a preset or a run directory of
any age, which is a plain functional `keras.Model`. Why not a `keras.Model`
subclass with the parts as attributes (as keras-hub's backbones are): the
presets and run directories saved so far load as plain functional models,
which have no such attributes, and a subclass would change the class name
every new `.keras` file records.

Example:

>>> parts = model_parts(zoo.recognizer("lstm", vocab_size=7, units=8, num_layers=2))
>>> [layer.name for layer in parts.recurrent], sorted(parts.heads)
(['recurrent', 'recurrent_1'], ['accept', 'next_symbol'])
"""

from typing import NamedTuple

import keras

RECURRENT_LAYERS = (keras.layers.RNN, keras.layers.Bidirectional)


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
    """The `ModelParts` of a model a zoo builder made (built or loaded).

    A one-line `ValueError` for anything else: a model that is not a
    functional `keras.Model`, or has no recurrent layer or two embeddings.
    """
    if not isinstance(model, keras.Model) or not hasattr(model, "output_names"):
        raise ValueError(
            "Expected a functional keras.Model from a zoo builder (zoo."
            f"language_model, ...); received {type(model).__name__}."
        )
    embeddings = [x for x in model.layers if isinstance(x, keras.layers.Embedding)]
    recurrent = tuple(x for x in model.layers if isinstance(x, RECURRENT_LAYERS))
    if len(embeddings) > 1 or not recurrent:
        raise ValueError(
            "Expected a model from a zoo builder (one embedding at most, "
            f"recurrent layers); model {model.name!r} has {len(embeddings)} "
            f"embeddings and {len(recurrent)} recurrent layers."
        )
    # A layer's `output` is what its first call gave: a head is called once.
    giving = {id(layer.output): layer for layer in model.layers}
    heads = {
        name: giving.get(id(output))
        for name, output in zip(model.output_names, model.outputs, strict=True)
    }
    if None in heads.values():
        raise ValueError(
            f"Expected each output of model {model.name!r} to be the first call "
            "of a layer, as a zoo builder's heads are; one is not."
        )
    return ModelParts(embeddings[0] if embeddings else None, recurrent, heads)
