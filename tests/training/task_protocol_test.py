import ast
import inspect
import typing
from pathlib import Path

import pytest

from tests.training.tiny import TINY, tiny_recipe
from training import compile_mode, fitting
from training.task_protocol import TrainableTask
from training.tasks import TASKS, make_task

ATTRIBUTES = typing.get_type_hints(TrainableTask)  # name -> type
METHODS = {
    name: value
    for name, value in vars(TrainableTask).items()
    if inspect.isfunction(value) and not name.startswith("_")
}


def task_members_used(module):
    """The `task.X` names that `module`'s functions taking a `task` use."""
    tree = ast.parse(Path(module.__file__).read_text())
    used = set()
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        if "task" not in [argument.arg for argument in function.args.args]:
            continue
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "task"
            ):
                used.add(node.attr)
    return used


def test_the_protocol_declares_exactly_what_the_fit_path_uses():
    used = task_members_used(fitting) | task_members_used(compile_mode)
    assert used == set(ATTRIBUTES) | set(METHODS)
    assert not set(ATTRIBUTES) & set(METHODS)


def test_every_task_kind_has_a_tiny_recipe():
    assert set(TINY) == set(TASKS)


@pytest.mark.parametrize("kind", sorted(TASKS))
def test_every_task_kind_is_a_trainable_task(kind, text_file):
    task = make_task(tiny_recipe(kind, text_file))
    assert isinstance(task, TASKS[kind]) and isinstance(task, TrainableTask)
    for name, kind_of in ATTRIBUTES.items():
        value = getattr(task, name)
        assert not callable(value) and isinstance(value, kind_of), name
    for name, declared in METHODS.items():
        method = getattr(task, name)
        assert inspect.ismethod(method), name
        expected = list(inspect.signature(declared).parameters)[1:]  # no self
        assert list(inspect.signature(method).parameters) == expected, name
