"""The suite's warning filters (pyproject.toml's filterwarnings) as tested facts.

Pytest applies them around every test, so a test sees them in force: a
warning attributed to a module of this project or of its tests is an error,
an upstream deprecation raised inside upstream's own modules is dropped, and
any other warning is shown (recorded).
"""

import warnings

import pytest

OURS = ("zoo", "zoo.cells.zoo_cell", "training.runs", "tuning.search", "tests.zoo.x")
UPSTREAM = ("keras", "keras.src.saving.saving_lib", "keras_tuner.src.engine.oracle")


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


@pytest.mark.parametrize("module", UPSTREAM)
@pytest.mark.parametrize(
    "category", [DeprecationWarning, PendingDeprecationWarning, FutureWarning]
)
def test_an_upstream_deprecation_inside_upstream_is_dropped(module, category):
    with warnings.catch_warnings(record=True) as caught:
        warn_from(module, category)
    assert caught == []


@pytest.mark.parametrize(
    "module, category",
    [
        ("keras.src.trainers.epoch_iterator", UserWarning),  # e.g. our misuse
        ("numpy", DeprecationWarning),  # not an upstream the filters name
        ("zookeeper", DeprecationWarning),  # a module is matched by whole name
        ("training_wheels.x", DeprecationWarning),
    ],
)
def test_other_warnings_are_shown_not_dropped_or_raised(module, category):
    with warnings.catch_warnings(record=True) as caught:
        warn_from(module, category)
    assert [str(w.message) for w in caught] == ["a warning"]
