import dataclasses
import json
import re
from pathlib import Path

import keras
import pytest

import zoo
from training.core import recipe_files
from training.core.config import option_fields
from training.core.config.train_options import TrainOptions
from training.data.tokenize import Vocabulary
from training.reproduction import table_schema
from training.runs import runs
from training.tasks import TASKS, make_task, recipes


@pytest.mark.parametrize("name", recipes.available_recipes())
def test_every_recipe_resolves_and_builds_its_model(name, no_data):
    for scale in recipes.SCALES:
        recipe = recipes.resolve(name, scale)
        assert recipe.name == name and recipe.scale == scale
    recipe = recipes.resolve(name, "small")
    words = Vocabulary.build("a b c\n", level="word", add_eos=True)
    # The tasks that build their vocabulary from the data they read.
    read = ("language_model", "acceptability")
    vocabulary = words if recipe.task.kind in read else None
    model = make_task(recipe, vocabulary).build_model()
    assert isinstance(model, keras.Model) and model.count_params() > 0


def test_the_kinds_are_the_task_registry():
    assert recipes.KINDS == {kind: task.options for kind, task in TASKS.items()}
    for kind, options in recipes.KINDS.items():
        assert options.kind == kind
        assert dataclasses.is_dataclass(options)
        assert options.__dataclass_params__.frozen


def test_options_override_merges_or_replaces():
    merged = recipes.resolve(
        "recognition_d2_diffstk_rnn_paper",
        "paper",
        ["model.options.noise_stddev=0.1"],
    )
    assert merged.model.options == {
        "stack_depth": 64,
        "stack_width": 5,
        "read_depth": 1,
        "noise_stddev": 0.1,
    }
    replaced = recipes.resolve(
        "recognition_d2_diffstk_rnn", "small", ["model.cell=lstm", "model.options={}"]
    )
    assert replaced.model.options == {}
    small = recipes.resolve(
        "recognition_d2_diffstk_rnn",
        "small",
        ["model.options.noise_stddev=0", "train.seed=1"],
    )
    assert small.model.options == {
        "stack_depth": 64,
        "stack_width": 5,
        "read_depth": 3,
        "noise_stddev": 0,
        "carry_forward": "soft",
    }
    assert small.train.seed == 1


def test_a_renamed_recipe_file_names_the_same_runs(tmp_path):
    # The paper's recipes moved to `_paper` names with their words unchanged:
    # their records are matched by words and settings, not the file's name.
    paper = recipes.resolve("recognition_d2_diffstk_rnn_paper", "paper")
    source = recipe_files.RECIPE_DIR / f"{paper.name}.toml"
    renamed_file = tmp_path / "recognition_d2_diffstk_rnn.toml"
    renamed_file.write_text(source.read_text())
    renamed = recipes.resolve(str(renamed_file), "paper")
    assert renamed.name != paper.name and renamed != paper
    assert renamed.run_identity() == paper.run_identity()
    for other in (
        paper.with_values({"train.seed": 1}),
        paper.with_values({"description": "another experiment"}),
        recipes.resolve("recognition_d2_diffstk_rnn_paper", "small"),
        recipes.resolve("recognition_d2_diffstk_rnn", "paper"),
    ):
        assert other.run_identity() != paper.run_identity()


def test_small_scale_overrides_the_paper_scale():
    paper = recipes.resolve("ptb_char_lstm", "paper")
    small = recipes.resolve("ptb_char_lstm", "small", ["train.epochs=3"])
    assert paper.model.units == 991 and small.model.units == 128
    assert paper.train.epochs == 200 and small.train.epochs == 3


@pytest.mark.parametrize(
    "name, overrides, message",
    [
        ("dyck2_mlstm", ["task.kind=tagging"], "Unknown task.kind 'tagging'"),
        ("dyck2_mlstm", ["model.cell=nope"], "Unknown cell 'nope'; expected one of"),
        ("dyck2_dyck_rnn", ["model.cell=lstm"], "expected model.cell='dyck_rnn'"),
        (
            "recognition_d2_diffstk_rnn",
            ["task.step_labels=all"],
            "Unknown task.step_labels 'all'; expected one of: string, prefix",
        ),
        ("recognition_d2_diffstk_rnn", ["task.language=D0"], "language must be 'Dn'"),
        ("ptb_word_lstm", ["task.corpus=nope"], "Unknown corpus 'nope'"),
        (
            "ptb_char_lstm",
            ["task.corpus=wikitext2"],
            r"Corpus 'wikitext2' is read at level 'word' or 'byte'; "
            r"received level='char'\.",
        ),
        ("ptb_word_lstm", ["task.level=byte"], "Corpus 'ptb' is read at level"),
        (
            "dyck2_mlstm",
            ["train.stateful=true"],
            "train.stateful carries a language model's state from batch to batch, "
            r"which task.kind 'dyck' does not take; expected false \(the default\), "
            "received true",
        ),
        (
            "ptb_word_lstm",
            ["train.reduce_lr_patience=2", "train.final_learning_rate=0.0001"],
            "expected one learning-rate schedule",
        ),
        (
            "dyck2_mlstm",
            ["task.train_cutoff=25"],
            "Unknown recipe key 'task.train_cutoff' for task.kind 'dyck'; valid "
            "keys: task.k, task.m, ",
        ),
        ("ptb_char_lstm", ["task.train_cutoff=0"], "task.train_cutoff must be >= 1"),
        ("ptb_word_lstm", ["train.eval_temperature=0.01"], "with model.cell"),
        (
            "wikitext2_second_order_lstm",
            ["train.eval_temperature=0"],
            "expected a number > 0",
        ),
        ("dyck2_mlstm", ["train.stop_below_loss=0"], "stop_below_loss must be > 0"),
        (
            "recognition_d2_diffstk_rnn",
            ["task.hard_negatives=insert"],
            "Unknown task.hard_negatives 'insert'; expected one of: swap, edit",
        ),
        ("recognition_d2_diffstk_rnn", ["train.clipvalue=0"], "clipvalue must be > 0"),
        ("dyck2_mlstm", ["train.curriculum=true"], "which task.kind 'dyck' does not"),
        ("ptb_word_lstm", ["train.reset_every=0"], "train.reset_every zeroes"),
        ("ptb_word_lstm", ["train.reset_every=1.5"], "must be of type int or null"),
        (
            "ptb_word_lstm",
            ["train.stateful=false", "train.reset_every=16"],
            "with train.stateful=false",
        ),
        (
            "dyck2_mlstm",
            ["model.bidirectional=true"],
            "Unknown recipe key 'model.bidirectional' for task.kind 'dyck'",
        ),
        (
            "dyck_depth_lstm",
            ["model.pooling=mean"],
            "Unknown recipe key 'model.pooling' for task.kind 'dyck_depth'",
        ),
        ("dyck2_dyck_rnn", ["model.num_layers=2"], "Unknown recipe key 'model.num"),
        ("dyck2_mlstm", ["task.corpus=ptb"], "Unknown recipe key 'task.corpus'"),
        ("dyck2_mlstm", ["train.reset_every=4"], "train.reset_every zeroes"),
        ("dyck2_mlstm", ["nope=1"], "Unknown recipe key 'nope'; valid keys: desc"),
        ("dyck2_mlstm", ["model=1"], "Recipe key 'model' must be a table"),
        ("dyck2_mlstm", ["description=1"], "'description' must be of type str"),
        (
            "blimp_acceptability_lstm",
            ["model.pooling=first"],
            "Unknown model.pooling 'first'; expected one of: last, mean, max",
        ),
        ("blimp_acceptability_lstm", ["model.bidirectional=1"], "of type bool"),
        ("blimp_acceptability_lstm", ["task.pairs_per_suite=0"], "must be >= 1"),
        ("blimp_acceptability_lstm", ["task.split_seed=-1"], "must be >= 0"),
        ("dyck2_mlstm", ["task.train_min_length=0"], "must be >= 1; received 0"),
        (
            "dyck2_dyck_rnn",
            ["task.train_min_length=200"],  # the maximum stays Hewitt's 124
            r"task.train_min_length=200, task.train_max_length=None: length range "
            r"\[200, 124\] holds no Dyck-\(2, 4\) string",
        ),
        (
            "dyck_depth_lstm",
            ["task.m=1000", "task.train_min_length=2000", "task.train_max_length=2001"],
            r"task.m must be >= 1 and <= 32; received 1000",  # before the lengths
        ),
        ("dyck2_mlstm", ["task.train_max_length=2.5"], "int or null; received 2.5"),
        (
            "recognition_d2_diffstk_rnn",
            ["model.options.stak_depth=64"],
            r"^model.options.stak_depth is not an option of cell 'diffstk_rnn'; "
            r"expected one of: .*, stack_depth, ",
        ),
        (
            "dyck2_lstm",
            ["model.options.forget_bias=3"],
            "not an option of cell 'lstm'; expected one of: activation, ",
        ),
        (
            "dyck2_dyck_rnn",
            ["task.m=6", "model.units=4"],
            r"^model.units is the Dyck-RNN's hidden size, task.m \* embedding_dim "
            r"= 6 here; received model.units=4: set task.m",
        ),
        (
            "dyck2_dyck_rnn",
            ['model.options={"embeding_dim": 2}'],
            "embeding_dim is not an option of the Dyck-RNN .*: embedding_dim, ",
        ),
    ],
)
def test_bad_combinations_are_refused_before_any_data(
    name, overrides, message, no_data
):
    with pytest.raises(recipes.RecipeError, match=message) as info:
        recipes.resolve(name, "small", overrides)
    assert "\n" not in str(info.value)


def test_the_dyck_rnns_hidden_size_follows_task_m(no_data):
    for overrides, units in (
        (["task.m=6"], 6),
        (['model.options={"embedding_dim": 2, "trainable_embeddings": true}'], 8),
        (["task.m=8", "model.units=8"], 8),  # the same size, said twice
    ):
        recipe = recipes.resolve("dyck2_dyck_rnn", "small", overrides)
        assert recipe.model.units == units
        model = make_task(recipe).build_model()
        assert zoo.model_parts(model).recurrent[0].cell.units == units


@pytest.mark.parametrize(
    "section",
    [
        TrainOptions,
        *recipes.KINDS.values(),
        *dict.fromkeys(options.model_arguments for options in recipes.KINDS.values()),
    ],
    ids=lambda cls: cls.__name__,
)
def test_every_key_has_a_type_or_its_own_check(section):
    types = option_fields.field_types(section)
    for field in dataclasses.fields(section):
        expected, _ = types[field.name]
        assert expected is not None or field.metadata["check"] is not None, field
        default = option_fields.default_of(field)
        if default is not None and expected is not None:
            assert isinstance(default, expected), field.name


@pytest.mark.parametrize(
    "override, message",
    [
        # Optional keys (default None) are checked as the others are.
        ("train.clipvalue=nan", "'train.clipvalue' must be of type float or null"),
        ("train.clipvalue=inf", "'train.clipvalue' must be of type float or null"),
        ("train.clipvalue=abc", "'train.clipvalue' must be of type float or null"),
        ("train.clipvalue=[1]", "'train.clipvalue' must be of type float or null"),
        ("train.clipvalue=true", "float or null; received True"),
        ("train.clipvalue=NaN", "train.clipvalue must be a finite number"),
        ("train.clipvalue=Infinity", "train.clipvalue must be a finite number"),
        ("train.final_learning_rate=NaN", "final_learning_rate must be a finite"),
        ("train.final_learning_rate=nan", "'train.final_learning_rate' must be of"),
        ("train.stop_below_loss=nan", "'train.stop_below_loss' must be of type"),
        ("train.stop_below_loss=true", "float or null; received True"),
        ("train.stop_below_loss=-Infinity", "stop_below_loss must be a finite"),
        ("train.reduce_lr_patience=true", "int or null; received True"),
        ("train.max_steps_per_epoch=2.5", "int or null; received 2.5"),
        ("train.temperature_factor=true", "float or null; received True"),
        ("model.output_dropout=abc", "'model.output_dropout' must be of type float"),
        # Keys with a default are never null.
        ("train.epochs=null", "'train.epochs' must be of type int; received None"),
        ("model.tie_embeddings=1", "must be of type bool; received 1"),
        # Ranges with an upper end, which Keras would refuse only when fitting.
        ("model.output_dropout=1", "model.output_dropout must be >= 0 and < 1"),
        ("train.reduce_lr_factor=1", "train.reduce_lr_factor must be > 0 and < 1"),
        ("train.temperature_factor=1.5", "temperature_factor must be > 0 and <= 1"),
        ("train.seed=-1", "train.seed must be >= 0"),
    ],
)
def test_every_key_is_checked_for_type_and_range(override, message, no_data):
    with pytest.raises(recipes.RecipeError, match=re.escape(message)) as info:
        recipes.resolve("tiny_dyck_lstm", "small", [override])
    assert "\n" not in str(info.value)


def test_an_int_is_a_float_and_null_unsets_an_optional_key(no_data):
    recipe = recipes.resolve(
        "tiny_dyck_lstm", "small", ["train.clipvalue=2", "model.embedding_dim=null"]
    )
    assert recipe.train.clipvalue == 2 and recipe.model.embedding_dim is None


def test_the_training_length_range_defaults_to_hewitts(no_data):
    # Recipes and records from before the option resolve as they did: the
    # defaults are the splits `dyck.dyck_splits` drew before it existed.
    recipe = recipes.resolve("dyck2_lstm", "paper")
    assert recipe.task.train_min_length == 1
    assert recipe.task.train_max_length is None
    long = recipes.resolve(
        "dyck2_lstm",
        "paper",
        ["task.train_min_length=200", "task.train_max_length=400"],
    )
    assert (long.task.train_min_length, long.task.train_max_length) == (
        200,
        400,
    )


def test_a_key_of_an_optional_type_takes_null_or_that_type(no_data):
    with pytest.raises(recipes.RecipeError, match="'task.data_dir' must be of type"):
        recipes.resolve("ptb_word_lstm", "small", ["task.data_dir=3"])
    recipe = recipes.resolve("ptb_word_lstm", "small", ["task.data_dir=null"])
    assert recipe.task.data_dir is None


def test_a_recipe_is_read_as_attributes_and_changed_into_a_new_one(no_data):
    recipe = recipes.resolve("dyck2_mlstm", "small")
    assert (recipe.task.kind, recipe.task.k, recipe.model.cell) == ("dyck", 2, "mlstm")
    assert recipe.value("train.learning_rate") == recipe.train.learning_rate
    with pytest.raises(dataclasses.FrozenInstanceError):
        recipe.train.epochs = 3
    changed = recipe.with_values({"train.epochs": 3, "model.options.forget_bias": 1})
    assert (changed.train.epochs, recipe.train.epochs) == (3, 8)
    assert changed.model.options == {**recipe.model.options, "forget_bias": 1}
    assert changed == recipes.resolve(
        "dyck2_mlstm", "small", ["train.epochs=3", "model.options.forget_bias=1"]
    )
    with pytest.raises(recipes.RecipeError, match="train.epochs must be >= 1"):
        recipe.with_values({"train.epochs": 0})
    with pytest.raises(recipes.RecipeError, match="'task.corpus' for task.kind"):
        recipe.with_values({"task.corpus": "ptb"})


ROOT = Path(__file__).resolve().parents[3]
SAVED = sorted(ROOT.glob("results/**/recipe.json")) + sorted(
    ROOT.glob("zoo/presets/*/recipe.json")
)


def test_every_committed_recipe_json_is_typed_and_reads_to_the_values_it_holds():
    # Records and presets of the full form were migrated (python -m
    # training.migrate): each holds keys of its kind alone, read back as saved.
    assert len(SAVED) > 700
    for path in SAVED:
        saved = json.loads(path.read_text())
        typed = runs.read_recipe(path).to_dict()
        for section in ("task", "model", "train"):
            assert saved[section] == {k: typed[section][k] for k in saved[section]}, (
                path
            )
        assert {k: typed[k] for k in ("name", "scale")} == {
            k: saved[k] for k in ("name", "scale")
        }


def test_every_record_is_the_recipe_its_table_row_resolves_to():
    # What `python -m training.reproduce` finds a record by: the record's
    # recipe.json read back is the row's recipe at the record's seed, the
    # recipe file's name aside (the paper's recipes were renamed `_paper`).
    checked = 0
    for name in table_schema.available_tables():
        table = table_schema.load_table(name)
        for row in table.rows:
            for path in sorted((ROOT / "results" / name / row.name).glob("seed-*")):
                seed = int(path.name.removeprefix("seed-"))
                run = table_schema.make_run(table, row, seed, "unused")
                saved = runs.read_recipe(path / "recipe.json")
                assert saved.run_identity() == run.recipe.run_identity(), path
                checked += 1
    assert checked > 600


def test_a_typed_recipe_json_holds_only_the_keys_of_its_kind(tmp_path, no_data):
    recipe = recipes.resolve("dyck2_dyck_rnn", "small")
    saved = recipe.to_dict()
    assert "corpus" not in saved["task"] and "language" not in saved["task"]
    assert set(saved["model"]) == {"cell", "units", "options"}
    assert "curriculum" not in saved["train"] and "stateful" not in saved["train"]
    runs.write_json(tmp_path / "recipe.json", saved)
    assert runs.read_recipe(tmp_path / "recipe.json") == recipe


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        # The full form of an earlier format: another kind's key at its default.
        ("task", "corpus", "ptb", "names no typed recipe: it holds task.corpus,"),
        ("model", "pooling", "last", "names no typed recipe: it holds model.pooling,"),
        ("train", "sampled_softmax", 0, "it holds train.sampled_softmax, which"),
        ("task", "corpus", "wikitext2", "Unknown recipe key 'task.corpus' for"),
        ("train", "stateful", True, "which task.kind 'closing_bracket' does not"),
        ("task", "nope", 1, "Unknown recipe key 'task.nope' for"),
    ],
)
def test_a_recipe_json_with_a_key_of_another_kind_is_refused(
    tmp_path, section, key, value, message
):
    recipe = recipes.resolve("dyck2_dyck_rnn", "small")
    saved = recipe.to_dict()
    saved[section][key] = value
    runs.write_json(tmp_path / "recipe.json", saved)
    with pytest.raises(runs.RunError, match=message) as info:
        runs.read_recipe(tmp_path / "recipe.json")
    assert str(info.value).startswith(repr(str(tmp_path / "recipe.json")))
    assert "\n" not in str(info.value)
