"""A recipe is read by attribute, never by string key, outside its loader.

A resolved recipe is a `training.core.config.recipe_loader.Recipe` of typed
sections: code reads `recipe.train.learning_rate`, and a section's options
are declared once, in its dataclass (docs/layout.md, "Adding a recipe
option"). Read from the source with `ast` (nothing is imported): in every
module of `zoo`, `training` and `tuning` but the loader's and the
migration's (`LOADER`), a subscript or `.get(...)` with a string constant
is refused on a name that holds a recipe or one of its sections
(`RECIPE_NAMES`: `recipe["train"]`, `train["epochs"]`,
`task.recipe["model"]`), and a section's name is refused as the key of a
`config` (`config["train"]`; a Keras layer's `config["units"]` is its own).
"""

import ast

from tests.layering_test import MODULES, ROOT

# The modules that turn tables (TOML, JSON) into recipes and back.
# The loader, and the migration, which reads recipe files of earlier formats
# as the plain tables they are, before the loader can.
LOADER = (
    "training.core.config.recipe_loader",
    "training.tasks.recipes",
    "training.reproduction.format_migration",
    "training.reproduction.recipe_migration",
)
# Names a recipe or a section of one goes by.
RECIPE_NAMES = ("recipe", "train", "task", "model")
SECTIONS = ("task", "model", "train")


def _name(node):
    """The name a subscripted value goes by: `a`, `x.a`, `a[...]` -> "a"."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _string(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def string_keyed_reads(source):
    """`(line, text)` of each string-keyed read of a recipe in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript):
            value, key = node.value, _string(node.slice)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            value, key = node.func.value, _string(node.args[0])
        else:
            continue
        name = _name(value)
        if key is None or name is None:
            continue
        if name in RECIPE_NAMES or (name.endswith("config") and key in SECTIONS):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_the_scan_finds_the_reads_it_refuses():
    source = (
        'recipe["train"]["epochs"]\n'
        "train['learning_rate']\n"
        'task.recipe["model"]\n'
        'recipe.get("task")\n'
        'self.config["train"]\n'
        # allowed: attributes, a layer's own config, a split named "train"
        "recipe.train.epochs\n"
        'config["units"]\n'
        'arrays["train"]\n'
        "recipe[key]\n"
    )
    assert [line for line, _ in string_keyed_reads(source)] == [1, 1, 2, 3, 4, 5]


def test_no_module_reads_a_recipe_by_string_key_outside_the_loader():
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {text}"
        for module, path in MODULES.items()
        if module not in LOADER
        for line, text in string_keyed_reads(path.read_text())
    ]
    assert not wrong, "read these as attributes (recipe.train.epochs):\n" + "\n".join(
        wrong
    )
