import json
import shutil

import keras
import numpy as np
import pytest

import zoo
from zoo import presets

DYCK_TOKENS = ["<pad>", "START", "END", "(a", "(b", "a)", "b)"]


def write_preset(folder, model, tokens, name="hand_made"):
    """A preset written by hand, as `python -m training.preset` lays it out."""
    folder.mkdir(parents=True)
    model.save(folder / "best.keras")
    vocabulary = {"level": "word", "add_eos": False, "tokens": tokens}
    (folder / "vocabulary.json").write_text(json.dumps(vocabulary))
    (folder / "card.json").write_text(json.dumps({"name": name}))
    return folder


def test_a_preset_loads_from_any_directory(tmp_path):
    keras.utils.set_random_seed(0)
    model = zoo.language_model("mlstm", vocab_size=7, units=4)
    folder = write_preset(tmp_path / "mine", model, DYCK_TOKENS)
    preset = zoo.load_preset(folder)
    assert isinstance(preset, presets.Preset)
    ids = np.array([[1, 3, 4, 6]], "int32")
    np.testing.assert_allclose(preset.model(ids), model(ids), atol=1e-6)
    assert preset.vocabulary["tokens"] == DYCK_TOKENS
    assert preset.card == {"name": "hand_made"} == zoo.preset_card(str(folder))
    assert presets.preset_dir(folder) == folder


def test_unknown_presets_are_one_line_errors_listing_the_available_ones(tmp_path):
    with pytest.raises(ValueError) as error:
        zoo.load_preset("no_such_preset")
    message = str(error.value)
    assert "\n" not in message and "'no_such_preset'" in message
    assert ", ".join(presets.available()) in message
    with pytest.raises(ValueError, match="directory without card.json"):
        zoo.preset_card(tmp_path)


def test_available_lists_only_preset_folders(tmp_path, monkeypatch):
    keras.utils.set_random_seed(0)
    write_preset(tmp_path / "b_preset", zoo.dyck_rnn_model(2, 4), DYCK_TOKENS)
    shutil.copytree(tmp_path / "b_preset", tmp_path / "a_preset")
    (tmp_path / "not_a_preset").mkdir()
    (tmp_path / "loading.py").write_text("")
    monkeypatch.setattr(presets.loading, "PRESET_DIR", tmp_path)
    assert presets.available() == ["a_preset", "b_preset"]
    assert zoo.load_preset("a_preset").card["name"] == "hand_made"
