"""The generator's own next-token distribution on Dyck-(k, m): a split's floor.

`dyck_strings.sample_dyck` draws every string from Hewitt et al.'s automaton
(`dyck_strings.py`'s docstring), redraws an END drawn before `min_length` brackets and
rejects whole a string that reaches `max_length` tokens without ending, then
starts again with fresh draws. The strings of a split (counted in sequences)
are therefore independent draws of the automaton *conditioned on acceptance*,
and the exact probability of the next token given a prefix is

    q(x | prefix) = p(x | d, n) * A(state after x) / A(d, n)

with `d` the stack depth and `n` the brackets read so far; `p` is the
automaton's step (at depth 0 before the minimum END is redrawn, so each open
bracket has probability 1/k; at depth m the matching close is certain; else
END or the matching close 1/2 and each open bracket 1/(2k)); `A(d, n)` is the
probability that the automaton, from depth d after n brackets, ends before
the maximum (1 after END, 0 at `max_length` brackets). It depends on the
prefix through d, n and the bracket on top of the stack only, and `A(0, 0)`
is the fraction of samples the sampler keeps. No predictor has a lower
expected cross-entropy on the split's strings (it is the Bayes-optimal
predictor); on a finite split a model can score a hair below it by chance.
Its closing-bracket mass is all on the bracket that matches, so its WCPA and
every LDPA are 1 by construction.

`DyckOracle(k, m, min_length, max_length)` holds `log A` and the per-state
log-probabilities; `split_oracles` gives one per split of `dyck_strings.dyck_splits`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from training.data import dyck_strings

LOG_HALF = math.log(0.5)
# The least fraction of samples a recipe's training length range must keep
# (`check_task_lengths`); `sample_dyck` itself gives up below 1 in 1000.
MIN_ACCEPTANCE = 0.01


def _log_acceptance(m, min_length, max_length):
    """`log A(n, d)`, shape `(max_length + 1, m + 1)`: see the module docstring."""
    log_a = np.full((max_length + 1, m + 1), -np.inf)
    with np.errstate(divide="ignore"):
        for n in range(max_length - 1, -1, -1):
            after = log_a[n + 1]
            row = np.empty(m + 1)
            row[1:m] = np.logaddexp(LOG_HALF + after[: m - 1], LOG_HALF + after[2:])
            row[m] = after[m - 1]  # the close is forced
            row[0] = after[1] if n < min_length else np.logaddexp(0.0, after[1])
            if n >= min_length:
                row[0] += LOG_HALF  # END or an open bracket, 1/2 each
            log_a[n] = row
    return log_a


class DyckOracle:
    """The exact next-token distribution of `dyck_strings.sample_dyck`'s strings.

    Args:
        k, m: the language Dyck-(k, m).
        min_length: `sample_dyck`'s `min_length` (fewest brackets before END).
        max_length: its `max_length` (longest length, END included).

    The tables `log_open` (each open bracket), `log_close` (the close that
    matches the top of the stack) and `log_end`, shape `(max_length, m + 1)`,
    are indexed by brackets read and depth; `-inf` where the token cannot
    follow (or the state cannot be reached).

    Example:
    >>> oracle = DyckOracle(2, 4)  # Hewitt's training lengths: up to 124
    >>> round(float(np.exp(oracle.log_end[2, 0])), 4)  # END after "()"
    0.5004

    A hair above the automaton's 1/2: a string that ends now is never
    rejected for its length, one that goes on is, rarely.
    """

    def __init__(self, k, m, min_length=1, max_length=None):
        dyck_strings.check_length_range(k, m, min_length, max_length)
        self.k, self.m = k, m
        self.min_length = min_length
        self.max_length = (
            dyck_strings.hewitt_max_length(m) if max_length is None else max_length
        )

    @functools.cached_property
    def log_acceptance(self):
        """`log A`, `(max_length + 1, m + 1)`: the chance to end in range."""
        return _log_acceptance(self.m, self.min_length, self.max_length)

    @property
    def acceptance(self):
        """The fraction of `sample_dyck`'s samples that it keeps."""
        return float(np.exp(self.log_acceptance[0, 0]))

    @functools.cached_property
    def _tables(self):
        m, log_a = self.m, self.log_acceptance
        here, after = log_a[:-1], log_a[1:]  # (n, d) and (n + 1, .)
        short = (np.arange(self.max_length) < self.min_length)[:, None]
        depth = np.arange(m + 1)[None, :]
        step = np.where(depth == m, 0.0, LOG_HALF)  # close: forced at depth m
        with np.errstate(divide="ignore", invalid="ignore"):
            close = step + np.pad(
                after[:, :-1], ((0, 0), (1, 0)), constant_values=-np.inf
            )
            open_step = np.where((depth == 0) & short, 0.0, LOG_HALF) - math.log(self.k)
            opens = open_step + np.pad(
                after[:, 1:], ((0, 0), (0, 1)), constant_values=-np.inf
            )
            end = np.where((depth == 0) & ~short, LOG_HALF, -np.inf)
            tables = [table - here for table in (opens, close, end)]
        reachable = np.isfinite(here)
        return [np.where(reachable, table, -np.inf) for table in tables]

    @property
    def log_open(self):
        return self._tables[0]

    @property
    def log_close(self):
        return self._tables[1]

    @property
    def log_end(self):
        return self._tables[2]

    def _states(self, arrays):
        """Brackets read, depth and kind (0 open, 1 close, 2 END, 3 other) of every
        target."""
        targets = np.asarray(arrays.targets)
        first_close = dyck_strings.FIRST_BRACKET_ID + self.k
        is_open = (targets >= dyck_strings.FIRST_BRACKET_ID) & (targets < first_close)
        is_close = (targets >= first_close) & (targets < first_close + self.k)
        step = is_open.astype(np.int64) - is_close
        depth = np.cumsum(step, axis=1) - step  # before each target
        read = np.broadcast_to(np.arange(targets.shape[1]), targets.shape)
        # 3: no token the generator draws (a table of -inf below)
        kind = np.select(
            [is_open, is_close, targets == dyck_strings.END_ID], [0, 1, 2], 3
        )
        return np.minimum(read, self.max_length - 1), np.clip(depth, 0, self.m), kind

    def token_log_probabilities(self, arrays):
        """`log q` of every target of `dyck_strings.frame`'s `arrays`; 0 on padding.

        Raises:
            ValueError: a real target the generator cannot produce here (a
                string out of this oracle's length range, deeper than m, a
                close that does not match): the arrays are not of its split.
        """
        read, depth, kind = self._states(arrays)
        never = np.full_like(self.log_end, -np.inf)
        stacked = np.stack([*self._tables, never])  # (kind, n, d)
        values = stacked[kind, read, depth]
        real = np.asarray(arrays.mask) > 0
        targets = np.asarray(arrays.targets)
        wrong_close = (kind == 1) & (targets != np.asarray(arrays.close_targets))
        impossible = real & (~np.isfinite(values) | wrong_close)
        if impossible.any():
            row, column = map(int, np.argwhere(impossible)[0])
            raise ValueError(
                f"string {row} has a token at position {column} that the "
                f"Dyck-({self.k}, {self.m}) generator with lengths "
                f"[{self.min_length}, {self.max_length}] never draws there; "
                "expected strings of this oracle's split"
            )
        return np.where(real, values, 0.0)

    def cross_entropy(self, arrays):
        """Mean `-log q` in nats over the tokens `arrays.mask` counts."""
        weights = np.asarray(arrays.mask, dtype=np.float64)
        if weights.sum() <= 0:
            raise ValueError("cross_entropy needs at least one unmasked token")
        total = (self.token_log_probabilities(arrays) * weights).sum()
        return float(-total / weights.sum())

    def log_probabilities(self, arrays):
        """`log q` of every token id at every position, `(N, T, 3 + 2k)`.

        `-inf` for the ids that cannot follow; on padding, whatever state the
        padding reads as (masked everywhere).
        """
        read, depth, _ = self._states(arrays)
        shape = (*read.shape, dyck_strings.vocabulary_size(self.k))
        result = np.full(shape, -np.inf)
        opens = slice(
            dyck_strings.FIRST_BRACKET_ID, dyck_strings.FIRST_BRACKET_ID + self.k
        )
        result[..., opens] = self.log_open[read, depth][..., None]
        result[..., dyck_strings.END_ID] = self.log_end[read, depth]
        close = np.asarray(arrays.close_targets)
        rows, columns = np.nonzero(close)
        result[rows, columns, close[rows, columns]] = self.log_close[read, depth][
            rows, columns
        ]
        return result


def split_oracles(k, m, train_min_length=1, train_max_length=None):
    """`{"train", "dev", "test"}` -> the `DyckOracle` of each split of
    `dyck_strings.dyck_splits`."""
    ranges = dyck_strings.split_length_ranges(m, train_min_length, train_max_length)
    return {name: DyckOracle(k, m, *bounds) for name, bounds in ranges.items()}


def check_task_lengths(k, m, low, high):
    """A one-line `ValueError` unless a recipe's Dyck training lengths can be drawn.

    `low` and `high` are a recipe's `task.train_min_length` (>= 1) and
    `task.train_max_length`: they must hold a Dyck-(k, m) string, and the
    sampler must keep at least `MIN_ACCEPTANCE` of its samples
    (`DyckOracle.acceptance`).
    """
    if low < 1:
        raise ValueError(f"task.train_min_length must be >= 1; received {low!r}.")
    where = f"task.train_min_length={low}, task.train_max_length={high}"
    try:
        acceptance = DyckOracle(k, m, low, high).acceptance
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    if acceptance < MIN_ACCEPTANCE:
        raise ValueError(
            f"{where}: the generator ends {acceptance:.2g} of its Dyck-({k}, {m}) "
            f"strings in that range; expected a range that keeps at least "
            f"{MIN_ACCEPTANCE}"
        )
