"""The suite's warning filters (pyproject.toml's filterwarnings) as tested facts.

Pytest applies them around every test, so a test sees them in force: a
warning attributed to a module of this project or of its tests is an error,
each upstream deprecation the filters name is dropped where upstream raises
it, and any other warning is shown (recorded), a new upstream deprecation
included.
"""

import warnings

import pytest

OURS = (
    "zoo",
    "zoo.cells.zoo_cell",
    "training.runs.runs",
    "tuning.search",
    "tests.zoo.x",
)
# The upstream deprecations the filters drop: (module raising it, message).
UPSTREAM = [
    (
        "keras.src.backend.tensorflow.core",
        "__array__ implementation doesn't accept a copy keyword, so passing "
        "copy=False failed. __array__ must implement 'dtype' and 'copy' keyword "
        "arguments.",
    ),
    (
        "keras_tuner.src.engine.oracle",
        "currentThread() is deprecated, use current_thread() instead",
    ),
    (
        "keras_tuner.src.engine.oracle",
        "getName() is deprecated, get the name attribute instead",
    ),
]


def warn_from(module, category, message="a warning"):
    """Issues a warning attributed to `module`, as a `warnings.warn` there would."""
    warnings.warn_explicit(message, category, f"{module}.py", 1, module=module)


@pytest.mark.parametrize("module", OURS)
@pytest.mark.parametrize("category", [UserWarning, DeprecationWarning, RuntimeWarning])
def test_a_warning_from_the_project_fails_the_test(module, category):
    with pytest.raises(category, match="^a warning$"):
        warn_from(module, category)


def test_a_warning_issued_in_a_test_module_fails_the_test():
    with pytest.raises(UserWarning, match="^from the test$"):
        warnings.warn("from the test", UserWarning, stacklevel=1)


@pytest.mark.parametrize("module, message", UPSTREAM)
def test_a_named_upstream_deprecation_where_upstream_raises_it_is_dropped(
    module, message
):
    with warnings.catch_warnings(record=True) as caught:
        warn_from(module, DeprecationWarning, message)
    assert caught == []


@pytest.mark.parametrize("module, message", UPSTREAM)
def test_a_named_deprecation_raised_elsewhere_is_not_dropped(module, message):
    with warnings.catch_warnings(record=True) as caught:
        warn_from("keras.src.ops.core", DeprecationWarning, message)
    assert [str(w.message) for w in caught] == [message]
    with pytest.raises(DeprecationWarning):  # from this project: an error
        warn_from("training.runs.runs", DeprecationWarning, message)


@pytest.mark.parametrize(
    "module, category",
    [
        ("keras.src.trainers.epoch_iterator", UserWarning),  # e.g. our misuse
        ("keras.src.saving.saving_lib", DeprecationWarning),  # news from upstream
        ("keras_tuner.src.engine.oracle", FutureWarning),
        ("numpy", DeprecationWarning),  # not an upstream the filters name
        ("zookeeper", DeprecationWarning),  # a module is matched by whole name
        ("training_wheels.x", DeprecationWarning),
    ],
)
def test_other_warnings_are_shown_not_dropped_or_raised(module, category):
    with warnings.catch_warnings(record=True) as caught:
        warn_from(module, category)
    assert [str(w.message) for w in caught] == ["a warning"]
