import math

import pytest

from zoo.checks import check_number


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_number_that_is_not_finite_is_refused_whatever_the_range(value):
    with pytest.raises(ValueError, match="`eta` must be a finite number"):
        check_number("eta", value)


@pytest.mark.parametrize(
    "bounds, value, message",
    [
        ({"low": 0}, -1, r"`eta` must be in \[0, inf\); received -1."),
        ({"high": 1, "high_open": True}, 1, r"in \(-inf, 1\); received 1."),
        ({"low": 0, "high": 1, "low_open": True}, 0.0, r"in \(0, 1\]; received 0.0"),
    ],
)
def test_the_range_is_said_with_its_open_ends(bounds, value, message):
    with pytest.raises(ValueError, match=message):
        check_number("eta", value, **bounds)
