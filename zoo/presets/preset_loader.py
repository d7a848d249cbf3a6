"""One loader for trained models: a built-in preset, a preset folder, a run directory.

A preset is a folder (as keras-hub's presets are) of these parts:

    preset.json       the format: {"format_version", "class_name",
                      "keras_version", "parameters"}; a preset of another
                      format version is refused in one line
                      (`python -m training.migrate` brings one up to date)
    best.keras        the model: a zoo model class (`zoo.LanguageModel`, ...)
                      whose config is its constructor's arguments, and its
                      weights (no optimizer), loaded with
                      `keras.saving.load_model` in safe mode
    vocabulary.json   the tokenizer: the token names, id i is `tokens[i]`
                      ({"level", "add_eos", "unk_token", "eos_token",
                      "conventions", "tokens"}; `conventions` names how
                      natural text is written for it, `zoo.text_conventions`),
                      read as a `zoo.tokenizer.Tokenizer`
    recipe.json       the config: the resolved recipe the model was trained
                      from (task, model and training settings; `training`
                      rebuilds the model from it)
    card.json         the metadata only: name, description, task, cell, the
                      command that retrains it, seed, table and row,
                      parameter count, model file size, the metric to
                      re-measure with its value and tolerance, library versions

beside `metrics.json` (the run's metrics on every split) and `README.md`
(the card for people). A run directory of `python -m training.train` holds
the same files but the card and `preset.json`, so it loads the same way:
`from_preset` and every class's `from_preset` read either, and the commands
(`training.runs.runs.load_run`, `preset:NAME`) read them through the same
`PresetLoader`; `load_weights` is the one routine that loads a model file's
weights into a model. `save_preset` (`model.save_to_preset(dir)`) writes
`preset.json`, `best.keras` and, given a tokenizer, `vocabulary.json`;
`python -m training.preset` adds the recipe, the card and the metrics.

The built-in presets are folders of this package (`zoo/presets/NAME/`,
package data of the installed wheel); `python -m training.preset RUN_DIR
OUT_DIR` makes one from any finished run. Loading a preset reads these
files: the one place the library reads files, as a presets API must.
"""

import json
import zipfile
from pathlib import Path
from typing import NamedTuple

import keras

# Importing the cells registers them, so `load_model` knows every zoo class
# (the model classes are registered by `zoo` itself, imported first).
import zoo.cells  # noqa: F401
import zoo.layers  # noqa: F401
from zoo import initializers

PRESET_DIR = Path(__file__).parent
PRESET = "preset.json"
# 1: a plain functional graph in best.keras and no preset.json (before issue
# 58); 2: a zoo model class in best.keras, preset.json.
FORMAT_VERSION = 2
MODEL, VOCABULARY, CONFIG, CARD, README = (
    "best.keras",
    "vocabulary.json",
    "recipe.json",
    "card.json",
    "README.md",
)
# What a folder must hold to load (a preset's card is optional: a run has none).
PARTS = (MODEL, VOCABULARY, CONFIG)
MAKES_ONE = "python -m training.preset RUN_DIR OUT_DIR makes one"


class Preset(NamedTuple):
    """A loaded preset: model, tokenizer, config and card.

    `model` is the trained Keras model (uncompiled; a preset's is float32
    and stateless, a run directory's as it trained);
    `tokenizer` the `zoo.tokenizer.Tokenizer` of its vocabulary
    (`tokenizer(text)` -> ids, `tokenizer.tokens[i]` the name of id i);
    `config` the dict of `recipe.json`; `card` the dict of `card.json`
    (None for a run directory).
    """

    model: object
    tokenizer: object
    config: dict
    card: dict


def available():
    """The sorted names of the built-in presets."""
    return sorted(
        path.name
        for path in PRESET_DIR.iterdir()
        if path.is_dir() and (path / CARD).is_file()
    )


def preset_dir(name_or_dir):
    """The folder of a built-in preset's name, or `name_or_dir` as a folder.

    A one-line `ValueError` listing the built-in names when `name_or_dir` is
    neither a built-in name nor a folder holding a preset's or a run's
    `vocabulary.json` or `card.json`.
    """
    name = str(name_or_dir)
    if name in available():
        return PRESET_DIR / name
    path = Path(name)
    marks = (CARD, VOCABULARY, PRESET)
    if path.is_dir() and any((path / mark).is_file() for mark in marks):
        return path
    where = (
        f"{name!r} is a folder without {CARD}, {PRESET} or {VOCABULARY}"
        if path.is_dir()
        else f"Unknown preset {name!r}"
    )
    raise ValueError(
        f"{where}; expected one of: {', '.join(available()) or 'none'}, a preset "
        f"folder ({MAKES_ONE}) or a run directory."
    )


class PresetLoader:
    """Reads the parts of one preset folder or run directory, each when asked.

    Every file that is missing or cannot be read is a one-line `ValueError`
    naming it. `training.runs.runs.load_run` reads runs and `preset:NAME` with it,
    loading the weights into the model it rebuilds from the config
    (`load_model(model)`); `from_preset` and the classes' `from_preset`
    load the model file whole.

    Args:
        name_or_dir: a built-in preset's name or a folder (`preset_dir`).
    """

    def __init__(self, name_or_dir):
        self.directory = preset_dir(name_or_dir)

    def path(self, part):
        """The path of `part` (`MODEL`, `CONFIG`, ...); a one-line error if absent."""
        path = self.directory / part
        if not path.is_file():
            raise ValueError(
                f"{str(self.directory)!r} has no {part}; expected a preset folder "
                f"({', '.join(PARTS)}, {CARD}; {MAKES_ONE}) or a run directory "
                "written by python -m training.train."
            )
        return path

    def _json(self, part):
        path = self.path(part)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ValueError(
                f"{str(path)!r} cannot be read ({_first_line(error)}); expected "
                "the JSON file python -m training.train or training.preset wrote."
            ) from None

    def config(self):
        """The dict of `recipe.json`: what the model was trained from."""
        return self._json(CONFIG)

    def vocabulary(self):
        """The dict of `vocabulary.json`; a one-line `ValueError` unless it
        names its text conventions (`zoo.text_conventions`, or null)."""
        vocabulary = self._json(VOCABULARY)
        if isinstance(vocabulary, dict) and "conventions" not in vocabulary:
            raise ValueError(
                f"{str(self.path(VOCABULARY))!r} names no text conventions (a "
                "vocabulary of an earlier format); expected a 'conventions' key: "
                f"python -m training.migrate {str(self.directory)!r} brings it up "
                "to date."
            )
        return vocabulary

    def card(self):
        """The dict of `card.json`, or None where there is none (a run directory)."""
        return self._json(CARD) if (self.directory / CARD).is_file() else None

    def tokenizer(self):
        """The `zoo.tokenizer.Tokenizer` of `vocabulary.json`."""
        # Imported here: tokenizing needs TensorFlow, which zoo on another
        # Keras backend does not otherwise import.
        from zoo.tokenizer import Tokenizer

        vocabulary = self.vocabulary()
        try:
            return Tokenizer.from_vocabulary(vocabulary)
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(
                f"{str(self.path(VOCABULARY))!r} cannot be read ("
                f"{type(error).__name__}: {_first_line(error)}); expected a "
                "vocabulary's level, tokens and special tokens."
            ) from None

    def format_version(self):
        """The folder's format version; a one-line `ValueError` unless current.

        A preset (a folder with a card or `preset.json`) names it in
        `preset.json`; a run directory has none and is read as it is.
        """
        path = self.directory / PRESET
        if not path.is_file() and not (self.directory / CARD).is_file():
            return None
        version = self._json(PRESET).get("format_version") if path.is_file() else 1
        if version != FORMAT_VERSION:
            raise ValueError(
                f"{str(self.directory)!r} is a preset of format version {version!r}"
                f"; expected format version {FORMAT_VERSION}: python -m "
                "training.migrate PRESET_DIR brings it up to date."
            )
        return version

    def load_model(self, model=None, expected=None):
        """The model of `best.keras`, uncompiled.

        Without `model`: loaded whole (`keras.saving.load_model`, safe
        mode): the zoo model class the file records, refused in one line
        unless of the class `expected` (`Class.from_preset` passes its own)
        where one is given. With `model` (one rebuilt from
        `config()`, as the commands do, since a run directory's file holds
        the model as it trained: stateful, in mixed precision): the file's
        weights loaded into it (`load_weights`), which is returned.
        """
        self.format_version()
        path = self.path(MODEL)
        if model is not None:
            return load_weights(model, path)
        try:
            _check_zip(path)
            # Built only to take the file's weights: no draws (`initializers`).
            with initializers.weights_to_be_loaded():
                model = keras.saving.load_model(path, compile=False, safe_mode=True)
        except (OSError, ValueError, TypeError, zipfile.BadZipFile) as error:
            raise ValueError(_unreadable(path, error)) from None
        if expected is not None and not isinstance(model, expected):
            raise ValueError(
                f"{str(path)!r} holds a {type(model).__name__}; expected a zoo."
                f"{expected.__name__} (a file from before the zoo's model classes: "
                "python -m training.migrate brings it up to date)."
            )
        return model


def load_weights(model, path):
    """Loads the weights of the `.keras` file at `path` into `model`; returns it.

    The one routine that reads a model file's weights (presets, run
    directories, their backups' best models): a missing or damaged file, or
    one of another model, is a one-line `ValueError` naming it.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{str(path)!r} does not exist; expected a trained model.")
    try:
        _check_zip(path)
        model.load_weights(path)
    except (OSError, ValueError, TypeError, zipfile.BadZipFile) as error:
        raise ValueError(_unreadable(path, error)) from None
    return model


def _check_zip(path):
    if not zipfile.is_zipfile(path):  # Keras would say "File not found"
        raise zipfile.BadZipFile("File is not a zip file")


def _unreadable(path, error):
    return (
        f"{str(path)!r} cannot be read ({_first_line(error)}); expected a .keras "
        "file written by python -m training.train or training.preset."
    )


def save_preset(model, directory, tokenizer=None):
    """Writes `model` (a zoo model) as a preset into `directory`; returns it.

    Writes `best.keras` (`model.save`), `preset.json` and, given
    `tokenizer` (a `zoo.tokenizer.Tokenizer`), `vocabulary.json`: what
    every class's `from_preset` reads back. `directory` is made if needed;
    a non-empty folder that is not a preset is refused in one line (nothing
    of it is overwritten). The model file is written beside its place and
    moved in, so a preset's `best.keras` is whole or what it was.
    """
    if not hasattr(model, "save_to_preset"):  # zoo.ZooModel's, duck-typed
        raise ValueError(
            "save_to_preset saves a zoo model (zoo.LanguageModel, ...); received "
            f"{type(model).__name__}."
        )
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ValueError(
            f"Preset target {str(directory)!r} is a file; expected a folder."
        )
    if (
        directory.is_dir()
        and any(directory.iterdir())
        and not (directory / PRESET).is_file()
        and not (directory / CARD).is_file()
    ):
        raise ValueError(
            f"Preset target {str(directory)!r} is a non-empty folder that is not a "
            "preset; expected a new or empty folder."
        )
    directory.mkdir(parents=True, exist_ok=True)
    partial = directory / f".{MODEL}.partial.keras"
    model.save(partial)
    partial.replace(directory / MODEL)
    metadata = {
        "format_version": FORMAT_VERSION,
        "class_name": type(model).__name__,
        "keras_version": keras.__version__,
        "parameters": model.count_params(),
    }
    _write_json(directory / PRESET, metadata)
    if tokenizer is not None:
        _write_json(directory / VOCABULARY, tokenizer.get_config())
    return directory


def _write_json(path, value):
    path.write_text(
        json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


def _first_line(error):
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


def from_preset(name_or_dir):
    """Loads a preset by built-in name, or a preset folder or run directory.

    Reads only the folder's files (no data, no network). The model is the
    trained one, uncompiled, in float32, ready for `model(token_ids)` or
    `model.predict`; compile it to train further. A run directory's model
    is its `best.keras` as it trained (stateful, in mixed precision where
    the run was); `python -m training.preset` saves a preset's stateless
    and in float32.

    Example:

    >>> preset = zoo.from_preset("dyck_rnn_m4")
    >>> preset.tokenizer.tokens[:4]
    ['<pad>', 'START', 'END', '(a']
    >>> preset.model(np.array([[1, 3, 4]], "int32")).shape  # START (a (b
    TensorShape([1, 3, 2])
    >>> preset.tokenizer("(a (b")
    [3, 4]
    """
    loader = PresetLoader(name_or_dir)
    # Every small file first: a damaged folder fails before the model loads.
    loader.format_version()
    card = loader.card()
    # A preset saved by `save_to_preset` alone has no recipe, nor a vocabulary
    # unless it was given a tokenizer.
    alone = (loader.directory / PRESET).is_file() and card is None
    config = None if _absent(loader, CONFIG, alone) else loader.config()
    tokenizer = None if _absent(loader, VOCABULARY, alone) else loader.tokenizer()
    return Preset(loader.load_model(), tokenizer, config, card)


def _absent(loader, part, alone):
    """Whether `part` is one a preset saved by `save_to_preset` lacks."""
    return alone and not (loader.directory / part).is_file()


def preset_card(name_or_dir):
    """The card of a preset (a dict of metadata, the module docstring's keys)."""
    card = PresetLoader(name_or_dir).card()
    if card is None:
        raise ValueError(
            f"{str(name_or_dir)!r} has no {CARD}; expected a preset folder "
            f"({MAKES_ONE})."
        )
    return card
