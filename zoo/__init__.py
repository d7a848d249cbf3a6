"""A Keras 3 model zoo of input-dependent and stack-augmented recurrent cells."""

from zoo import cells
from zoo.backbone import Backbone, bidirectional_layer, recurrent_layer
from zoo.cells import *  # noqa: F403
from zoo.dyck_model import DyckRNN, dyck_rnn_model
from zoo.labeling import Classifier, Tagger, classifier, tagger
from zoo.model_parts import ModelParts, model_parts
from zoo.models import (
    LanguageModel,
    Recognizer,
    default_jit_compile,
    language_model,
    recognizer,
    reset_states,
)
from zoo.presets import from_preset, preset_card
from zoo.recognizer_training import (
    hybrid_recognition_loss,
    recognition_targets,
    trace_recognizer,
)
from zoo.registry import (
    available_cells,
    cell_takes_vocab_size,
    get_cell,
    get_cell_class,
)
from zoo.rnn_layer import RNN
from zoo.sampler import Sampler, generate
from zoo.zoo_model import ZooModel

__all__ = [
    "Backbone",
    "Classifier",
    "DyckRNN",
    "LanguageModel",
    "RNN",
    "Recognizer",
    "Tagger",
    "ZooModel",
    "available_cells",
    "bidirectional_layer",
    "cell_takes_vocab_size",
    "classifier",
    "default_jit_compile",
    "dyck_rnn_model",
    "get_cell",
    "get_cell_class",
    "hybrid_recognition_loss",
    "from_preset",
    "generate",
    "language_model",
    "model_parts",
    "ModelParts",
    "preset_card",
    "recognition_targets",
    "recognizer",
    "recurrent_layer",
    "reset_states",
    "Sampler",
    "tagger",
    "trace_recognizer",
    *cells.__all__,
]
