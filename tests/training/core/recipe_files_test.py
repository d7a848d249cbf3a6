import pytest

import zoo.cells.multi_matrix  # noqa: F401  registers mmlstm
from training.core import recipe_files
from training.tasks import recipes


def test_recipe_file_reads_back_as_the_recipe(tmp_path):
    recipe = recipes.resolve(
        "dyck2_mlstm",
        "paper",
        ['model.options={"forget_bias": 3.0, "activation": "tanh"}'],
    )
    path = recipe_files.write_recipe(recipe, tmp_path / "recipe.toml")
    read_back = recipes.resolve(str(path), "paper")
    for section in ("task", "model", "train"):
        assert getattr(read_back, section) == getattr(recipe, section)
    assert read_back.description == recipe.description


def test_a_recipe_file_that_does_not_read_back_is_refused(tmp_path):
    recipe = recipes.resolve(
        "dyck2_mlstm", "small", ['model.options={"forget_bias": NaN}']
    )
    with pytest.raises(
        ValueError, match=r"does not read back as the recipe's \[model\]"
    ):
        recipe_files.write_recipe(recipe, tmp_path / "recipe.toml")


@pytest.mark.parametrize(
    "name, message",
    [
        ("nope", "Unknown table 'nope'; expected one of: "),
        ("{tmp}/missing.toml", "Table file '{tmp}/missing.toml' does not exist."),
        ("{tmp}/bad.toml", "Table file '{tmp}/bad.toml' is not valid TOML: "),
    ],
)
def test_files_are_found_and_read_with_one_line_errors(name, message, tmp_path):
    (tmp_path / "bad.toml").write_bytes(b"title = \xff")
    name, message = (text.format(tmp=tmp_path) for text in (name, message))
    with pytest.raises(KeyError) as error:
        path = recipe_files.find(name, recipe_files.TABLE_DIR, "table", KeyError)
        recipe_files.read(path, "table", KeyError)
    assert error.value.args[0].startswith(message)
