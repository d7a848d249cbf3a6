import json
import shutil

import keras
import numpy as np
import pytest

import zoo
from zoo import presets
from zoo.tokenizer import Tokenizer

DYCK_TOKENS = ["<pad>", "START", "END", "(a", "(b", "a)", "b)"]


CONFIG = {"model": {"cell": "mlstm", "units": 4}}


def write_preset(folder, model, tokens, name="hand_made"):
    """A preset written by hand, as `python -m training.preset` lays it out."""
    folder.mkdir(parents=True)
    model.save_to_preset(folder)
    vocabulary = {
        "level": "word",
        "add_eos": False,
        "conventions": None,
        "tokens": tokens,
    }
    (folder / "vocabulary.json").write_text(json.dumps(vocabulary))
    (folder / "recipe.json").write_text(json.dumps(CONFIG))
    (folder / "card.json").write_text(json.dumps({"name": name}))
    return folder


def test_a_preset_loads_from_any_directory(tmp_path):
    keras.utils.set_random_seed(0)
    model = zoo.language_model("mlstm", vocab_size=7, units=4)
    folder = write_preset(tmp_path / "mine", model, DYCK_TOKENS)
    preset = zoo.from_preset(folder)
    assert isinstance(preset, presets.Preset)
    ids = np.array([[1, 3, 4, 6]], "int32")
    np.testing.assert_allclose(preset.model(ids), model(ids), atol=1e-6)
    assert isinstance(preset.tokenizer, Tokenizer)
    assert preset.tokenizer.tokens == DYCK_TOKENS
    assert preset.config == CONFIG
    assert preset.card == {"name": "hand_made"} == zoo.preset_card(str(folder))
    assert presets.preset_dir(folder) == folder
    assert not hasattr(zoo, "load_preset")  # one name for one function


HEADS = [
    (zoo.LanguageModel, ("mlstm", 7, 4), {"tie_embeddings": True}),
    (zoo.Recognizer, ("lstm", 7, 4), {}),
    (zoo.Tagger, ("gru", 7, 4, 3), {"bidirectional": True}),
    (zoo.Classifier, ("lstm", 7, 4, 2), {"pooling": "max"}),
    (zoo.DyckRNN, (2, 4), {}),
]


@pytest.mark.parametrize("cls, args, kwargs", HEADS)
def test_save_to_preset_and_from_preset_are_symmetric(tmp_path, cls, args, kwargs):
    keras.utils.set_random_seed(0)
    model = cls(*args, **kwargs)
    tokenizer = Tokenizer(DYCK_TOKENS, level="word")
    folder = model.save_to_preset(tmp_path / "mine", tokenizer=tokenizer)
    loaded = cls.from_preset(folder)
    assert type(loaded) is cls and loaded.get_config() == model.get_config()
    ids = np.array([[1, 3, 4, 6, 0]], "int32")
    outputs = keras.tree.flatten(model(ids)), keras.tree.flatten(loaded(ids))
    for a, b in zip(*outputs, strict=True):
        np.testing.assert_array_equal(a, b)
    assert zoo.ZooModel.from_preset(folder).name == model.name
    preset = zoo.from_preset(folder)  # no recipe or card: None
    assert preset.config is None and preset.card is None
    assert preset.tokenizer.tokens == DYCK_TOKENS
    metadata = json.loads((folder / "preset.json").read_text())
    assert metadata["format_version"] == presets.preset_loader.FORMAT_VERSION
    assert metadata["class_name"] == cls.__name__


def test_from_preset_of_another_class_is_one_line(tmp_path):
    folder = zoo.Recognizer("lstm", 7, 4).save_to_preset(tmp_path / "recognizer")
    with pytest.raises(ValueError, match=r"holds a Recognizer; expected a zoo\.Lang"):
        zoo.LanguageModel.from_preset(folder)


def test_a_preset_of_another_format_version_is_one_line(tmp_path):
    folder = write_preset(tmp_path / "old", zoo.DyckRNN(2, 4), DYCK_TOKENS)
    (folder / "preset.json").unlink()  # as a preset from before issue 58
    expected = r"of format version 1; expected format version 2: python -m train"
    with pytest.raises(ValueError, match=expected) as raised:
        zoo.from_preset(folder)
    assert "\n" not in str(raised.value)
    (folder / "preset.json").write_text(json.dumps({"format_version": 7}))
    with pytest.raises(ValueError, match="format version 7; expected format vers"):
        zoo.DyckRNN.from_preset(folder)


def test_save_to_preset_refuses_a_folder_that_is_not_a_preset(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="is a non-empty folder that is not a pre"):
        zoo.DyckRNN(2, 4).save_to_preset(tmp_path)
    assert [path.name for path in tmp_path.iterdir()] == ["notes.txt"]


def test_a_folder_without_a_card_loads_as_a_run_directory(tmp_path):
    keras.utils.set_random_seed(0)
    folder = write_preset(tmp_path / "run", zoo.dyck_rnn_model(2, 4), DYCK_TOKENS)
    (folder / "card.json").unlink()
    preset = zoo.from_preset(folder)
    assert preset.card is None and preset.tokenizer.tokens == DYCK_TOKENS
    with pytest.raises(ValueError, match="has no card.json; expected a preset"):
        zoo.preset_card(folder)


@pytest.mark.parametrize("name", presets.available())
def test_every_built_in_preset_loads_offline_and_matches_its_card(name):
    preset = zoo.from_preset(name)
    card = preset.card
    assert card["name"] == name and card == zoo.preset_card(name)
    folder = presets.preset_dir(name)
    assert folder.parent == presets.preset_loader.PRESET_DIR
    assert (folder / "best.keras").stat().st_size == card["size_bytes"]
    assert preset.model.count_params() == card["parameters"]["total"]
    trainable = sum(int(np.prod(w.shape)) for w in preset.model.trainable_weights)
    assert trainable == card["parameters"]["trainable"]
    # 64 steps (a word model's 10,000-token vocabulary as one string took 33 s)
    ids = np.arange(64, dtype="int32")[None] % 4 + 1
    outputs = preset.model(ids)
    for output in keras.tree.flatten(outputs):
        assert np.all(np.isfinite(np.asarray(output)))
    for key in ("command", "seed", "remeasure", "versions"):
        assert key in card
    # Metadata only: the config and the metrics are files of their own.
    assert "recipe" not in card and "metrics" not in card
    assert preset.config["train"]["seed"] == card["seed"]
    assert card["command"].startswith("python -m training.train ")
    assert f"train.seed={card['seed']}" in card["command"]


def test_the_dyck_preset_closes_the_bracket_on_top():
    # START (a (b (b b) b) a) (b (a a) b): after each token that leaves a
    # bracket open, the right closing bracket gets most of the mass.
    model = zoo.from_preset("dyck_rnn_m4").model
    brackets = [3, 4, 4, 6, 6, 5, 4, 3, 5, 6]
    closing = np.asarray(model(np.array([[1, *brackets]], "int32")))[0]
    tops = {1: 0, 2: 1, 3: 1, 4: 1, 5: 0, 7: 1, 8: 0, 9: 1}  # position: a) 0, b) 1
    for position, bracket in tops.items():
        assert closing[position, bracket] > 0.8, (position, closing[position])


def test_unknown_presets_are_one_line_errors_listing_the_available_ones(tmp_path):
    with pytest.raises(ValueError) as error:
        zoo.from_preset("no_such_preset")
    message = str(error.value)
    assert "\n" not in message and "'no_such_preset'" in message
    assert ", ".join(presets.available()) in message
    with pytest.raises(
        ValueError, match="folder without card.json, preset.json or vocabulary"
    ):
        zoo.preset_card(tmp_path)


def damage(folder, part):
    """`folder` with `part` missing or unreadable."""
    if part == "no best.keras":
        (folder / "best.keras").unlink()
    elif part == "no recipe.json":
        (folder / "recipe.json").unlink()
    elif part == "truncated best.keras":
        data = (folder / "best.keras").read_bytes()
        (folder / "best.keras").write_bytes(data[: len(data) // 2])
    else:
        (folder / part.split()[-1]).write_text('{"tokens": ')


@pytest.mark.parametrize(
    "part, message",
    [
        ("no best.keras", "has no best.keras; expected a preset folder"),
        ("no recipe.json", "has no recipe.json; expected a preset folder"),
        ("truncated best.keras", "best.keras' cannot be read ("),
        ("bad vocabulary.json", "vocabulary.json' cannot be read ("),
        ("bad recipe.json", "recipe.json' cannot be read ("),
        ("bad card.json", "card.json' cannot be read ("),
    ],
)
def test_a_damaged_preset_is_one_line_naming_the_file(tmp_path, part, message):
    keras.utils.set_random_seed(0)
    folder = write_preset(tmp_path / "mine", zoo.dyck_rnn_model(2, 4), DYCK_TOKENS)
    damage(folder, part)
    with pytest.raises(ValueError) as error:
        zoo.from_preset(folder)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_available_lists_only_preset_folders(tmp_path, monkeypatch):
    keras.utils.set_random_seed(0)
    write_preset(tmp_path / "b_preset", zoo.dyck_rnn_model(2, 4), DYCK_TOKENS)
    shutil.copytree(tmp_path / "b_preset", tmp_path / "a_preset")
    (tmp_path / "not_a_preset").mkdir()
    (tmp_path / "preset_loader.py").write_text("")
    monkeypatch.setattr(presets.preset_loader, "PRESET_DIR", tmp_path)
    assert presets.available() == ["a_preset", "b_preset"]
    assert zoo.from_preset("a_preset").card["name"] == "hand_made"


def test_a_preset_unpacks_into_model_tokenizer_config_and_card():
    model, tokenizer, config, card = zoo.from_preset("dyck_rnn_m4")
    assert tokenizer.tokens == DYCK_TOKENS and card["name"] == "dyck_rnn_m4"
    assert config["task"]["m"] == 4
    # Its vocabulary.json names none (null): the text as written.
    assert tokenizer.conventions == "plain"
    ids = tokenizer("(a (b b)")
    assert ids == [3, 4, 6] and tokenizer.detokenize([1, *ids]) == "START (a (b b)"
    closing = model(np.array([[1, *ids]], "int32"))[0, -1]
    assert np.argmax(closing) == 0  # a) closes next


def test_a_character_preset_scores_natural_text_in_its_characters():
    preset = zoo.from_preset("mlstm_ptb_char")
    tokenizer = preset.tokenizer
    assert tokenizer.conventions == "ptb_char"

    def log_likelihood(text):
        # A line of the corpus: read after <eos>, ended by one.
        ids = [tokenizer.eos_id, *tokenizer(text), tokenizer.eos_id]
        logits = preset.model(np.array([ids[:-1]], "int32"))[0]
        log_probabilities = np.asarray(keras.ops.log_softmax(logits))
        return log_probabilities[np.arange(len(ids) - 1), ids[1:]].sum()

    said = log_likelihood("The company said.")
    assert said == log_likelihood("the company said")
    # Each is its characters, not one unknown token a word.
    assert said > log_likelihood("xq zzv qqq") + 10
