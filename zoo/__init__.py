"""A Keras 3 model zoo of input-dependent and stack-augmented recurrent cells."""

from zoo import cells
from zoo.backbone import bidirectional_layer, recurrent_layer
from zoo.cells import *  # noqa: F403
from zoo.labeling import classifier, tagger
from zoo.model_parts import ModelParts, model_parts
from zoo.models import (
    default_jit_compile,
    hybrid_recognition_loss,
    language_model,
    recognition_targets,
    recognizer,
    reset_states,
    trace_recognizer,
)
from zoo.presets import from_preset, load_preset, preset_card
from zoo.registry import (
    available_cells,
    cell_takes_vocab_size,
    get_cell,
    get_cell_class,
)
from zoo.sampler import Sampler, generate
from zoo.tensorflow_loop import tensorflow_loop
from zoo.tensorflow_steps import tensorflow_steps

__all__ = [
    "available_cells",
    "bidirectional_layer",
    "cell_takes_vocab_size",
    "classifier",
    "default_jit_compile",
    "get_cell",
    "get_cell_class",
    "hybrid_recognition_loss",
    "from_preset",
    "generate",
    "language_model",
    "load_preset",
    "model_parts",
    "ModelParts",
    "preset_card",
    "recognition_targets",
    "recognizer",
    "recurrent_layer",
    "reset_states",
    "Sampler",
    "tagger",
    "tensorflow_loop",
    "tensorflow_steps",
    "trace_recognizer",
    *cells.__all__,
]
