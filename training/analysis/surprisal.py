"""Recovery from surprising inputs (Krause et al. 2016, section 4.2, Figure 3).

Krause et al. take the 10% of characters of the test set with the largest
loss averaged over the compared models and report each model's mean loss on
them, at 1 to 4 steps after them, and overall. `surprising_positions` and
`recovery` do that on per-token losses (from `scoring.token_losses`), which
may hold several independent rows: a position's followers are looked up in
its own row only.
"""

import math

import numpy as np

from training import plots
from training.scoring import LN2

KRAUSE_NOTE = (
    "Krause et al. 2016, Fig. 3 (Hutter Prize), 1-4 steps after: mLSTM 2.26, "
    "2.04, 1.61, 1.51;\nstacked LSTM 2.48, 2.25, 1.79, 1.67 bits/char"
)


def _check_losses(losses):
    losses = np.asarray(losses, dtype="float64")
    if losses.ndim == 2:
        losses = losses[:, None, :]
    if losses.ndim != 3 or losses.shape[0] < 1 or losses.shape[-1] < 1:
        raise ValueError(
            "`losses` must have shape (models, positions) or (models, rows, "
            f"positions) with at least one of each; received {losses.shape}."
        )
    return losses


def surprising_positions(losses, fraction=0.1):
    """Flat indices of the `fraction` of positions with the largest mean loss.

    Args:
        losses: `(models, positions)` or `(models, rows, positions)` losses of
            the same tokens under each model.
        fraction: In (0, 1]; `ceil(fraction * count)` positions are returned.

    Returns:
        Sorted indices into the flattened `(rows * positions)` mean loss; ties
        are broken by the earlier position.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"`fraction` must be in (0, 1]; received {fraction!r}.")
    mean = _check_losses(losses).mean(axis=0).reshape(-1)
    count = math.ceil(fraction * mean.size)
    order = np.argsort(-mean, kind="stable")
    return np.sort(order[:count])


def recovery(losses, fraction=0.1, steps=4):
    """Each model's mean loss on, and `1..steps` after, the surprising positions.

    Losses keep their unit (nats in, nats out). A surprising position whose
    `s`-th follower lies past the end of its row is left out of step `s`.

    Returns:
        A dict: `"positions"` (how many are surprising), `"counts"` (per
        step 0..steps, how many were averaged) and per model (list order)
        `"after"`, the mean loss at steps `0..steps` (0 is the surprising
        input itself), and `"overall"`, its mean over all positions.
    """
    losses = _check_losses(losses)
    length = losses.shape[-1]
    flat = surprising_positions(losses, fraction)
    rows, times = np.divmod(flat, length)
    after, counts = [], []
    for step in range(steps + 1):
        keep = times + step < length
        counts.append(int(keep.sum()))
        values = losses[:, rows[keep], times[keep] + step]  # [models, kept]
        after.append(
            values.mean(axis=1) if keep.any() else np.full(len(losses), np.nan)
        )
    after = np.stack(after, axis=1)  # [models, steps + 1]
    return {
        "positions": int(flat.size),
        "counts": counts,
        "after": after.tolist(),
        "overall": losses.reshape(len(losses), -1).mean(axis=1).tolist(),
    }


def in_bits(result):
    """`recovery`'s result with nats converted to bits."""
    converted = dict(result)
    converted["after"] = [[v / LN2 for v in row] for row in result["after"]]
    converted["overall"] = [v / LN2 for v in result["overall"]]
    return converted


def plot(result, labels, path, unit="bits/char"):
    """Loss against steps after the surprising input, one line per model."""
    fig, ax = plots.figure(
        "Loss after surprising inputs",
        "steps after the surprising input",
        f"mean loss ({unit})",
        source=KRAUSE_NOTE,
    )
    steps = range(len(result["after"][0]))
    for index, (label, values) in enumerate(zip(labels, result["after"], strict=True)):
        color = f"C{index}"
        ax.plot(steps, values, marker="o", color=color, label=label)
        ax.axhline(
            result["overall"][index],
            color=color,
            linestyle="--",
            linewidth=1,
            label=f"{label}, all positions",
        )
    ax.set_xticks(list(steps))
    ax.legend()
    return plots.save(fig, path)
