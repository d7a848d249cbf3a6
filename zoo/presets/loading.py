"""Trained models that ship with the zoo, and any preset directory.

A preset is a directory (as keras-hub's presets are) holding

    best.keras        the trained model: config and weights (no optimizer),
                      loaded with `keras.saving.load_model` in safe mode
    vocabulary.json   the token names, id i is `tokens[i]` ({"level",
                      "add_eos", "unk_token", "eos_token", "conventions",
                      "tokens"}; `conventions` names how natural text is
                      written for it, `zoo.text_conventions`)
    card.json         the model card: recipe, the command that retrains it,
                      seed, metrics on every split, table and row, parameter
                      count, file size, and the tolerance for re-measuring
    README.md         the same card for people
    recipe.json, metrics.json
                      as in the run directory it was made from, so a preset
                      is also a run directory for every `training` CLI

The built-in presets are folders of this package (`zoo/presets/NAME/`,
package data of the installed wheel); `python -m training.preset RUN_DIR
OUT_DIR` makes one from any finished run. Loading a preset reads these
files: the one place the library reads files, as a presets API must.
"""

import collections
import json
from pathlib import Path

import keras

# Importing the cells registers them, so `load_model` knows every zoo class.
import zoo.cells  # noqa: F401
import zoo.layers  # noqa: F401

PRESET_DIR = Path(__file__).parent
MODEL, VOCABULARY, CARD, README = (
    "best.keras",
    "vocabulary.json",
    "card.json",
    "README.md",
)


class Preset(collections.namedtuple("Preset", ["model", "vocabulary", "card"])):
    """A loaded preset: the Keras model, its vocabulary and its card.

    `vocabulary` is the dict of `vocabulary.json` (`vocabulary["tokens"][i]`
    is the name of token id i; `None` for a byte-level model, whose ids are
    the bytes); `card` is the dict of `card.json`. `tokenizer` reads
    natural text into the model's ids and back (`zoo.tokenizer.Tokenizer`,
    in the vocabulary's conventions).
    """

    __slots__ = ()

    @property
    def tokenizer(self):
        # Imported here: tokenizing needs TensorFlow, which zoo on another
        # Keras backend does not otherwise import.
        from zoo.tokenizer import Tokenizer

        return Tokenizer.from_vocabulary(self.vocabulary)


def available():
    """The sorted names of the built-in presets."""
    return sorted(
        path.name
        for path in PRESET_DIR.iterdir()
        if path.is_dir() and (path / CARD).is_file()
    )


def preset_dir(name_or_path):
    """The directory of a built-in preset's name or of a preset at a local path.

    A one-line `ValueError` listing the built-in names when `name_or_path`
    is neither a built-in name nor a directory holding `card.json`.
    """
    name = str(name_or_path)
    if name in available():
        return PRESET_DIR / name
    path = Path(name)
    if path.is_dir() and (path / CARD).is_file():
        return path
    where = (
        f"{name!r} is a directory without {CARD}"
        if path.is_dir()
        else f"Unknown preset {name!r}"
    )
    raise ValueError(
        f"{where}; expected one of: {', '.join(available()) or 'none'}, or a "
        "preset directory (python -m training.preset RUN_DIR OUT_DIR makes one)."
    )


def _read_json(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(
            f"Preset file {str(path)!r} cannot be read as JSON ({error})."
        ) from None


def preset_card(name_or_path):
    """The card of a preset (a dict): see the module docstring for its keys."""
    return _read_json(preset_dir(name_or_path) / CARD)


def load_preset(name_or_path):
    """Loads a preset by built-in name or local path; returns a `Preset`.

    Reads only the preset's files (no data, no network). The model is the
    trained one, uncompiled, in float32, ready for `model(token_ids)` or
    `model.predict`; compile it to train further.

    Example:

    >>> preset = zoo.load_preset("dyck_rnn_m4")
    >>> preset.vocabulary["tokens"][:4]
    ['<pad>', 'START', 'END', '(a']
    >>> preset.model(np.array([[1, 3, 4]], "int32")).shape  # START (a (b
    TensorShape([1, 3, 2])
    >>> preset.tokenizer("(a (b")
    [3, 4]
    """
    path = preset_dir(name_or_path)
    card = _read_json(path / CARD)
    vocabulary = _read_json(path / VOCABULARY)
    try:
        model = keras.saving.load_model(path / MODEL, compile=False, safe_mode=True)
    except (OSError, ValueError, TypeError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(
            f"Preset model {str(path / MODEL)!r} cannot be loaded ({reason})."
        ) from None
    return Preset(model, vocabulary, card)
