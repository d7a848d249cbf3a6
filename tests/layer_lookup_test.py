"""No module looks a layer up by a name written in it.

A zoo model's parts are found by the role each layer plays
(`zoo.model_parts`: its embedding, recurrent layers and heads), so the names
the builders give their layers are only what saved weights are found by.
Read from the source with `ast` (a comment or a string is not code): a call
of `get_layer`, as a method or a function, whose name (its first argument or
`name=`) is a string or an f-string fails, in every module of zoo/,
training/, tuning/ and tests/ (`SCANNED`).
"""

import ast
import functools

import pytest

from tests.layering_test import ROOT

SCANNED = ("zoo", "training", "tuning", "tests")


@functools.cache
def sources():
    """`{path from the root: its ast}` of every module of `SCANNED`."""
    paths = sorted(path for folder in SCANNED for path in (ROOT / folder).rglob("*.py"))
    return {path.relative_to(ROOT): ast.parse(path.read_text()) for path in paths}


def written_names(tree):
    """`(line, call)` of each `get_layer` call in `tree` with a name written out."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        called = getattr(function, "attr", getattr(function, "id", None))
        if called != "get_layer":
            continue
        names = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "name")]
        if any(
            isinstance(name, ast.JoinedStr)
            or isinstance(name, ast.Constant)
            and isinstance(name.value, str)
            for name in names
        ):
            yield node.lineno, ast.unparse(node)


def test_no_module_looks_a_layer_up_by_a_written_name():
    wrong = [
        f"{path}:{line} {call}"
        for path, tree in sources().items()
        for line, call in sorted(written_names(tree))
    ]
    assert not wrong, (
        "Layers looked up by a written name (use zoo.model_parts(model): "
        ".embedding, .recurrent, .heads, .head):\n" + "\n".join(wrong)
    )


@pytest.mark.parametrize(
    "source",
    [
        'model.get_layer("embedding")',
        "cell = model.get_layer('recurrent').cell",
        'self.get_layer(name="logits")',
        'model.get_layer(f"{cell}_0")',
        'get_layer("accept")',
    ],
)
def test_the_scan_flags_a_written_name(source):
    assert [call for _, call in written_names(ast.parse(source))] != []


@pytest.mark.parametrize(
    "source",
    [
        "model.get_layer(index=1)",
        "model.get_layer(name)",
        "# model.get_layer('embedding')\ntext = 'model.get_layer(\"logits\")'",
        'model.layers_named("embedding")',
    ],
)
def test_the_scan_passes_lookups_without_a_written_name(source):
    assert list(written_names(ast.parse(source))) == []


LIBRARY = ("zoo", "training", "tuning")


def layer_indexing(tree):
    """`(line, code)` of each `x.layers[...]` in `tree`: a layer found by position."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "layers"
        ):
            yield node.lineno, ast.unparse(node)


def test_no_library_module_finds_a_layer_by_its_index():
    # A part is an attribute of its model (`model.decoder`, `.recurrent_layers`).
    wrong = [
        f"{path}:{line} {code}"
        for path, tree in sources().items()
        if path.parts[0] in LIBRARY
        for line, code in sorted(layer_indexing(tree))
    ]
    assert not wrong, "Layers found by index:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    "source, found",
    [
        ("before = model.layers[model.layers.index(head) - 1]", True),
        ("first = model.layers[0]", True),
        ("layers = model.recurrent_layers[0]", False),
        ("for layer in model.layers: pass", False),
    ],
)
def test_the_index_scan_flags_an_index(source, found):
    assert bool(list(layer_indexing(ast.parse(source)))) == found
