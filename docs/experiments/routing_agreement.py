"""How far two runs route the same words to the same cells.

    python docs/experiments/routing_agreement.py A/routing-NAME.csv B/routing-NAME.csv

Reads two `routing-*.csv` files written by `python -m training.analyze
routing` on the same text (one row per token type: its count and the cell
that won it), matches the cells of the two runs one to one so as to agree on
as many tokens as possible (`scipy.optimize.linear_sum_assignment`), and
prints the tokens routed to matched cells against the number expected by
chance with the same cell shares. Cells are interchangeable between
independently trained runs, hence the matching.
"""

import csv
import sys

import numpy as np
from scipy.optimize import linear_sum_assignment


def winners(path):
    with open(path, newline="", encoding="utf-8") as file:
        return {
            r["token"]: (int(r["count"]), int(r["winner"]))
            for r in csv.DictReader(file)
        }


a, b = (winners(p) for p in sys.argv[1:3])
if set(a) != set(b):
    sys.exit("error: the two files route different tokens; run both on the same text")
cells = 1 + max(w for _, w in [*a.values(), *b.values()])
overlap = np.zeros((cells, cells))
for token, (count, winner) in a.items():
    overlap[winner, b[token][1]] += count
rows, cols = linear_sum_assignment(-overlap)
total = overlap.sum()
chance = (overlap.sum(1)[rows] * overlap.sum(0)[cols]).sum() / total
pairs = ", ".join(f"{r}->{c}" for r, c in zip(rows, cols, strict=True))
print(
    f"{overlap[rows, cols].sum():.0f} of {total:.0f} tokens routed to matched cells "
    f"({pairs}); {chance:.1f} expected by chance"
)
