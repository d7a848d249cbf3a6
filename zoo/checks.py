"""Argument checks shared by the zoo, the training library and the tuner.

Each raises a one-line `ValueError` that names the argument, says what was
expected and what was received.
"""

import math


def check_positive_int(name, value):
    """Raises a one-line `ValueError` unless `value` is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"`{name}` must be a positive integer; received {value!r}.")


def check_number(name, value, low=None, high=None, low_open=False, high_open=False):
    """Raises a one-line `ValueError` unless `value` is a finite number in range.

    `low_open` / `high_open` exclude the bound itself: a dropout rate is
    `check_number("dropout", rate, 0, 1, high_open=True)`, in [0, 1). NaN and
    infinities are refused whatever the range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"`{name}` must be a number; received {value!r}.")
    if not math.isfinite(value):
        raise ValueError(f"`{name}` must be a finite number; received {value!r}.")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        opening = "(" if low_open or low is None else "["
        closing = ")" if high_open or high is None else "]"
        low = "-inf" if low is None else low
        high = "inf" if high is None else high
        raise ValueError(
            f"`{name}` must be in {opening}{low}, {high}{closing}; received {value!r}."
        )


def check_choice(name, value, choices):
    """Raises a one-line `ValueError` unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(
            f"`{name}` must be one of {', '.join(map(repr, choices))}; "
            f"received {value!r}."
        )
