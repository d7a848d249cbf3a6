"""Dyck-n strings of eq. 28 (Mali et al., 2020), read ahead in blocks.

`recognition_sets.sample_positives` draws its Dyck strings here. A string's
derivation takes one uniform a non-terminal, leftmost first, and the
uniforms come 64 at a time: a block for each string begun and another each
time a string needs more. `PcfgStrings` finds where each derivation ends for
many blocks at once (numpy over thousands of blocks) and derives only the
strings it keeps, from the same uniforms: the same strings, and the same
generator state after, as drawing a block at a time
(`tests/training/data/recognition_sets_test.py` checks both against that
reading).
"""

import copy

import numpy as np

from training.data.dyck_strings import FIRST_BRACKET_ID

BLOCK = 64
MOST_BLOCKS_AHEAD = 4096


def derive(uniforms, n, p, p1):
    """The string eq. 28 derives with `uniforms`, which end its derivation."""
    out = []
    pending = [-1]  # -1 is the non-terminal S; other entries are terminal ids
    for u in uniforms:
        while pending[-1] >= 0:
            out.append(pending.pop())
        pending.pop()
        if u < p:
            kind = min(int(u / p * n), n - 1)
            # S -> open S close: push in reverse order.
            pending.append(FIRST_BRACKET_ID + n + kind)
            pending.append(-1)
            out.append(FIRST_BRACKET_ID + kind)
        elif u < p + p1:
            pending.append(-1)
            pending.append(-1)
    out.extend(reversed(pending))
    return out


def derivation_ends(u, p, p1, max_length):
    """`(stop, ends, length)` of the derivations begun at each block of `u`.

    For the starts 0, 64, ...: `stop`, the number of uniforms of `u` read
    when the derivation ended or its string passed `max_length` (more than
    `len(u)` where `u` ran out first); `ends`, whether it ended; `length`,
    its string's length where it ended.
    """
    size = len(u)
    opens = u < p
    # Non-terminals left after j uniforms: 1 + level[j] - level[start].
    level = np.concatenate(
        ([0], np.cumsum(np.where(opens, 0, np.where(u < p + p1, 1, -1))))
    )
    opened = np.concatenate(([0], np.cumsum(opens)))
    starts = np.arange(0, size, BLOCK)
    # A derivation ends at the first j after its start whose level is one
    # below the start's (levels move by one at most): looked up in the
    # (level, j) order.
    low = level.min()
    keys = (level - low) * (size + 1) + np.arange(size + 1)
    keys.sort()
    below = level[starts] - 1 - low
    wanted = below * (size + 1) + starts + 1
    found = keys[np.minimum(np.searchsorted(keys, wanted), size)]
    ended = (found >= wanted) & (found // (size + 1) == below)
    end = np.where(ended, found % (size + 1), size + 1)
    # The string passes max_length at the open bracket that makes
    # 2 * opens > max_length.
    cut = np.searchsorted(opened, opened[starts] + max_length // 2 + 1)
    length = 2 * (opened[np.minimum(end, size)] - opened[starts])
    return np.minimum(end, cut), end < cut, length


class PcfgStrings:
    """Eq. 28's strings of `min_length` to `max_length` symbols, one draw at a time.

    Each item is a string in range or None (a draw that ended shorter or
    passed `max_length`). The uniforms are read ahead from a copy of `rng`;
    `settle()` moves `rng` on past the ones the draws used.
    """

    def __init__(self, rng, n, p, p1, min_length, max_length):
        self.rng, self.n, self.p, self.p1 = rng, n, p, p1
        self.min_length, self.max_length = min_length, max_length
        self.ahead = copy.deepcopy(rng)
        self.used = 0  # uniforms the draws so far read

    def __iter__(self):
        u = np.empty(0)
        start = 0
        blocks = 16
        while True:
            u = np.concatenate([u[start:], self.ahead.random(BLOCK * blocks)])
            blocks = min(2 * blocks, MOST_BLOCKS_AHEAD)
            stop, ends, length = (
                a.tolist() for a in derivation_ends(u, self.p, self.p1, self.max_length)
            )
            start = 0
            while start < len(u) and stop[start // BLOCK] <= len(u):
                index = start // BLOCK
                read = -(-(stop[index] - start) // BLOCK) * BLOCK
                if ends[index] and length[index] >= self.min_length:
                    string = derive(
                        u[start : stop[index]].tolist(), self.n, self.p, self.p1
                    )
                else:
                    string = None
                start += read
                self.used += read
                yield string

    def settle(self):
        """Moves `rng` on past the uniforms the draws read."""
        for first in range(0, self.used, BLOCK * MOST_BLOCKS_AHEAD):
            self.rng.random(min(BLOCK * MOST_BLOCKS_AHEAD, self.used - first))
