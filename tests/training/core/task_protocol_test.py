import ast
import inspect
import typing
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.training.tiny import TINY, tiny_recipe
from training.core import compile_mode, fitting
from training.core.task_protocol import TrainableTask
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


def fitted(task, seed):
    """The weights of a model of `task` drawn with `seed` and fitted."""
    keras.utils.set_random_seed(seed)
    model = task.build_model()
    fitting.fit(model, task)
    return model.get_weights()


@pytest.mark.parametrize(
    "kind, extra",
    [
        ("dyck", []),
        ("dyck", ["train.max_steps_per_epoch=2", "train.epochs=3"]),
        ("language_model", ["train.max_steps_per_epoch=3", "train.reset_every=2"]),
    ],
    ids=["dyck", "dyck-capped", "stateful-capped"],
)
def test_two_fits_on_one_task_train_as_fits_on_two_tasks(
    kind, extra, text_file, monkeypatch
):
    # A search trial's seeds: one task, its data made once, a model a seed.
    recipe = tiny_recipe(kind, text_file, extra)
    calls, make = [], TASKS[kind].make_train_data
    monkeypatch.setattr(
        TASKS[kind], "make_train_data", lambda self: calls.append(1) or make(self)
    )
    task = make_task(recipe)
    shared = [fitted(task, seed) for seed in (0, 1)]
    assert calls == [1]
    # The first fit on the shared task is already a fit on a fresh task; the
    # second is the one that could see what the first left behind.
    fresh = fitted(make_task(recipe), 1)
    for a, b in zip(shared[1], fresh, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not all(
        np.array_equal(a, b) for a, b in zip(*shared, strict=True)
    )  # the seeds differ


def test_a_clone_with_another_recipe_makes_its_own_training_data():
    task = make_task(tiny_recipe("recognition"))
    dataset, callbacks = task.train_data()
    again, again_callbacks = task.train_data()
    assert again is dataset and again_callbacks is callbacks  # the same objects
    capped = tiny_recipe("recognition", extra=["train.max_steps_per_epoch=2"])
    clone = task.with_recipe(capped)
    assert clone.arrays is task.arrays  # the same strings, not a new dataset
    assert int(dataset.cardinality()) > 0
    assert clone.train_data()[0].cardinality() == tf.data.INFINITE_CARDINALITY
