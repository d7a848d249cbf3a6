"""Only `zoo/keras_compat.py` touches what Keras keeps private.

Read from the source with `ast` (a comment or a string is not code). Outside
the compatibility module, a module of zoo/, training/, tuning/ or tests/
touches an underscored attribute (`x._name` read, written or deleted, or
`getattr`, `setattr`, `hasattr`, `delattr` with the name written out) only
when `_name` is the project's own and no library's:

- the project's own: a method or class attribute of one of its classes, set
  as `self._name` in one, or a module's own function, class or constant
  (the compatibility module's do not count);
- no library's: the installed Keras and keras-tuner never write `._name` or
  `def _name`. So a class here may not define such a name either: in a
  subclass of a Keras class it would override Keras's private hook (a name
  shared by chance is renamed, not exempted).

`collections.namedtuple`'s underscored methods (`_asdict`, `_replace`, ...)
are its public API. No module imports `keras.src` or reads `keras.src`.
"""

import ast
import functools
import importlib.util
import re
from pathlib import Path

import pytest

from tests.layer_lookup_test import SCANNED, sources
from tests.layering_test import MODULES, ROOT, is_private

COMPAT = "zoo.keras_compat"
LIBRARIES = ("keras", "keras_tuner")
NAMEDTUPLE = frozenset({"_asdict", "_replace", "_fields", "_field_defaults", "_make"})
ACCESSORS = ("getattr", "setattr", "hasattr", "delattr")


@functools.cache
def library_names():
    """Every `_name` the installed libraries write as `._name` or `def _name`."""
    spelled = re.compile(r"(?:\bdef\s+|\.)(_[A-Za-z][A-Za-z0-9_]*)")
    names = set()
    for library in LIBRARIES:
        root = Path(importlib.util.find_spec(library).origin).parent
        for path in root.rglob("*.py"):
            names.update(spelled.findall(path.read_text(errors="replace")))
    return frozenset(names)


def definitions(tree):
    """`(line, name)` of each private name `tree`'s classes define."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield item.lineno, item.name
                elif isinstance(item, ast.Assign | ast.AnnAssign):
                    assigned = isinstance(item, ast.Assign)
                    targets = item.targets if assigned else [item.target]
                    for target in targets:
                        if isinstance(target, ast.Name):
                            yield item.lineno, target.id
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            yield node.lineno, node.attr


def module_names(tree):
    """The names `tree` defines at its top level: functions, classes, constants."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Assign):
            yield from (t.id for t in node.targets if isinstance(t, ast.Name))


def touches(tree):
    """`(line, name)` of each private attribute `tree` reads, writes or deletes."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            yield node.lineno, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ACCESSORS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and is_private(node.args[1].value)
        ):
            yield node.lineno, node.args[1].value


def keras_src_uses(tree):
    """Lines where `tree` imports `keras.src` or reads it from `keras`."""
    names = {"keras"}  # and what `import keras as ...` binds
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "keras" and alias.asname:
                    names.add(alias.asname)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
            modules += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Attribute) and node.attr == "src":
            value = node.value
            modules = ["keras.src"] if getattr(value, "id", None) in names else []
        else:
            continue
        if any(m == "keras.src" or m.startswith("keras.src.") for m in modules):
            yield node.lineno


def own_names(trees):
    """The private names `trees` define (their classes' and their own), less
    the libraries'."""
    names = {name for tree in trees for _, name in definitions(tree)}
    names |= {name for tree in trees for name in module_names(tree)}
    return {name for name in names if is_private(name)} - library_names()


def violations(tree, own):
    """`(line, what)` of each private thing `tree` touches that is not `own`."""
    found = [(line, "keras.src") for line in keras_src_uses(tree)]
    for line, name in touches(tree):
        if name not in NAMEDTUPLE and name not in own:
            found.append((line, name))
    for line, name in definitions(tree):
        if is_private(name) and name in library_names():
            found.append((line, f"defines {name}, a name Keras uses"))
    return sorted(set(found))


def scanned():
    """`{path from the root: its ast}` of every module of `SCANNED` (zoo/,
    training/, tuning/, tests/) but the compatibility module."""
    compat = MODULES[COMPAT].relative_to(ROOT)
    return {path: tree for path, tree in sources().items() if path != compat}


def test_no_module_but_the_compatibility_module_touches_a_private_attribute():
    parsed = scanned()
    own = own_names(parsed.values())
    wrong = [
        f"{path}:{line} {what}"
        for path, tree in parsed.items()
        for line, what in violations(tree, own)
    ]
    assert not wrong, (
        "Private attributes outside zoo/keras_compat.py (move each there, or "
        "use Keras's public API):\n" + "\n".join(wrong)
    )


def test_the_scan_reads_the_tests_too():
    assert {path.parts[0] for path in scanned()} == set(SCANNED)
    assert Path("tests/training/precision_test.py") in scanned()
    assert Path("zoo/keras_compat.py") not in scanned()


def test_the_compatibility_module_is_what_the_scan_would_flag():
    compat = ast.parse(MODULES[COMPAT].read_text())
    flagged = {what for _, what in violations(compat, own_names(scanned().values()))}
    assert {"keras.src", "_flatten_layers", "_initial_epoch", "_oracle"} <= flagged
    assert "defines _maybe_symbolic_build, a name Keras uses" in flagged


@pytest.mark.parametrize(
    "source, flagged",
    [
        ("model._initial_epoch = 3", {"_initial_epoch"}),
        ("epoch = self.model._initial_epoch or 0", {"_initial_epoch"}),
        ("del layer._seed_generators[0]", {"_seed_generators"}),
        (
            "class B(BackupAndRestore):\n    def f(self):\n"
            "        return self._current_epoch",
            {"_current_epoch"},
        ),
        (
            "class B(BackupAndRestore):\n    def _save_model(self):\n        pass",
            {"defines _save_model, a name Keras uses"},
        ),
        (
            "class B(keras.Model):\n    def __init__(self):\n        self._layers = []",
            {"_layers", "defines _layers, a name Keras uses"},
        ),
        ("oracle = getattr(tuner.oracle, '_oracle', tuner.oracle)", {"_oracle"}),
        ("from keras.src import backend", {"keras.src"}),
        ("from keras import src", {"keras.src"}),
        ("import keras.src.backend", {"keras.src"}),
        ("import keras as k\nk.src.backend.rnn()", {"keras.src"}),
        ("t._keras_history.operation.name", {"_keras_history"}),
        ("(clipped,) = optimizer._clip_gradients([gradient])", {"_clip_gradients"}),
    ],
)
def test_the_scan_flags_what_keras_keeps_private(source, flagged):
    tree = ast.parse(source)
    assert {what for _, what in violations(tree, own_names([tree]))} == flagged


@pytest.mark.parametrize(
    "source",
    [
        "# model._initial_epoch = 3\ntext = 'keras.src.backend.rnn'",
        "class A:\n    def __init__(self):\n        self._cache = {}\n"
        "    def get(self, other):\n        return other._cache",
        "row = point._asdict()",
        "def _helper():\n    pass\nmodule._helper()",
        "kind = model.__class__",
        "import keras\nkeras.layers.RNN",
    ],
)
def test_the_scan_passes_the_projects_own_names_comments_and_strings(source):
    tree = ast.parse(source)
    assert violations(tree, own_names([tree])) == []
