"""Recovery from surprising inputs (Krause et al. 2016, section 4.2, Figure 3).

Krause et al. take the 10% of characters of the test set with the largest
loss averaged over the compared models and report each model's mean loss on
them, at 1 to 4 steps after them, and overall. `surprising_positions` and
`recovery` do that on per-token losses (from `scoring.token_losses`), which
may hold several independent rows: a position's followers are looked up in
its own row only. `advantage` tests the paper's claim for two models: the
first model's advantage (the second's loss minus the first's) after the
surprising inputs against its advantage over all positions, with bootstrap
intervals over positions.

`analyze_surprisal` runs it on run directories and writes the figure and
its numbers (`python -m training.analyze surprisal`, which prints
`report_lines`).
"""

import math

import numpy as np

from training.analysis.run_inputs import check_kind, run_label, run_names, stream_ids
from training.core import plots, scoring
from training.core.scoring import LN2
from training.runs import runs
from zoo.checks import check_number, check_positive_int

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


def _bootstrap_means(values, resamples, rng):
    """Means of `resamples` resamples (with replacement) of `values`."""
    means = np.empty(resamples)
    for index in range(resamples):
        means[index] = values[rng.integers(0, values.size, values.size)].mean()
    return means


def advantage(losses, fraction=0.1, steps=4, resamples=1000, level=0.95, seed=0):
    """The first model's advantage after surprising inputs and overall.

    The advantage at a position is the second model's loss minus the
    first's. Krause et al. claim the mLSTM's advantage over the stacked LSTM
    is larger in the steps after a surprising input than over all positions.
    The surprising positions are `surprising_positions`' (of both models'
    mean loss). `excess` is the advantage averaged over steps `1..steps`
    after them (positions with all `steps` followers in their row) minus the
    advantage over all positions. Each has a percentile bootstrap interval
    from `resamples` resamples of positions; the excess's resamples the two
    sets independently (the surprising positions are a subset of all, so this
    overstates its spread: a conservative interval). Positions are resampled
    one by one, as if independent.

    Returns:
        A dict in the losses' unit: `"after"` (per step `0..steps`, the mean
        advantage) and `"after_interval"` (`[low, high]` per step),
        `"overall"` and `"overall_interval"`, `"excess"` and
        `"excess_interval"`, `"level"`, `"resamples"` and `"verdict"`:
        `"holds"` when the excess's interval lies above 0, `"reversed"` when
        below, else `"within the interval"`.
    """
    losses = _check_losses(losses)
    if len(losses) != 2:
        raise ValueError(
            f"`advantage` compares two models; received losses of {len(losses)}."
        )
    check_positive_int("resamples", resamples)
    check_number("level", level, 0, 1, low_open=True, high_open=True)
    length = losses.shape[-1]
    gap = losses[1] - losses[0]  # [rows, positions]
    flat = surprising_positions(losses, fraction)
    rows, times = np.divmod(flat, length)
    rng = np.random.default_rng(seed)
    tails = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]

    def summary(values):
        if values.size == 0:
            return math.nan, [math.nan, math.nan], np.full(resamples, math.nan)
        means = _bootstrap_means(values, resamples, rng)
        return float(values.mean()), np.percentile(means, tails).tolist(), means

    after, after_interval = [], []
    for step in range(steps + 1):
        keep = times + step < length
        mean, interval, _ = summary(gap[rows[keep], times[keep] + step])
        after.append(mean)
        after_interval.append(interval)
    keep = times + steps < length
    following = np.stack(
        [gap[rows[keep], times[keep] + step] for step in range(1, steps + 1)]
    ).mean(axis=0)
    following_mean, _, following_means = summary(following)
    overall, overall_interval, overall_means = summary(gap.reshape(-1))
    excess_interval = np.percentile(following_means - overall_means, tails).tolist()
    if excess_interval[0] > 0:
        verdict = "holds"
    elif excess_interval[1] < 0:
        verdict = "reversed"
    else:
        verdict = "within the interval"
    return {
        "after": after,
        "after_interval": after_interval,
        "overall": overall,
        "overall_interval": overall_interval,
        "excess": following_mean - overall,
        "excess_interval": excess_interval,
        "level": level,
        "resamples": resamples,
        "verdict": verdict,
    }


def in_bits(result):
    """`recovery`'s result with nats converted to bits."""
    converted = dict(result)
    converted["after"] = [[v / LN2 for v in row] for row in result["after"]]
    converted["overall"] = [v / LN2 for v in result["overall"]]
    return converted


def advantage_in_bits(result):
    """`advantage`'s result with nats converted to bits."""
    converted = dict(result)
    for key in ("after", "after_interval", "overall_interval", "excess_interval"):
        converted[key] = np.divide(result[key], LN2).tolist()
    for key in ("overall", "excess"):
        converted[key] = result[key] / LN2
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


def analyze_surprisal(run_dirs, out, split, fraction=0.1, steps=4):
    """Writes `surprisal.png` and `surprisal.json` of language-model runs on
    `split` (same vocabulary); returns the recovery in bits, with the first
    run's `advantage` over the second when there are two."""
    check_number("--fraction", fraction, 0, 1, low_open=True)
    loaded = [runs.load_run(d) for d in run_dirs]
    for run_dir, run in zip(run_dirs, loaded, strict=True):
        check_kind(run.recipe, ("language_model",), "surprisal", run_dir)
    if any(run.vocabulary != loaded[0].vocabulary for run in loaded[1:]):
        raise ValueError(
            "surprisal compares runs on the same tokens; expected runs with the "
            "same vocabulary."
        )
    ids = stream_ids(loaded[0].task, split)
    losses = np.stack(
        [scoring.token_losses(r.task.build_model, r.model, ids) for r in loaded]
    )
    result = in_bits(recovery(losses, fraction, steps))
    if len(loaded) == 2:
        result["advantage"] = advantage_in_bits(advantage(losses, fraction, steps))
    labels = [
        run_label(name, run.recipe)
        for name, run in zip(run_names(run_dirs), loaded, strict=True)
    ]
    result.update({"runs": labels, "unit": "bits", "split": split})
    level = loaded[0].recipe.task.level  # PTB characters are read as words
    unit = "bits/char" if level == "char" else f"bits/{level}"
    plots.make_out_dir(out)
    plot(result, labels, out / "surprisal.png", unit=unit)
    runs.write_json(out / "surprisal.json", result)
    return result


def advantage_line(labels, advantage):
    """One line: the first run's advantage after surprises against overall."""
    steps = len(advantage["after"]) - 1
    low, high = advantage["excess_interval"]
    return (
        f"{labels[0]} over {labels[1]}: {advantage['overall']:.4f} bits overall, "
        f"{advantage['excess']:+.4f} more at 1..{steps} steps after a surprising "
        f"input ({advantage['level']:.0%} interval {low:+.4f} to {high:+.4f}): "
        f"{advantage['verdict']}"
    )


def report_lines(result):
    """What `python -m training.analyze surprisal` prints: each run's loss at
    0..4 steps after a surprise, and with two runs the first's advantage."""
    lines = []
    for label, after in zip(result["runs"], result["after"], strict=True):
        values = ", ".join(f"{v:.3f}" for v in after)
        lines.append(f"{label}: {values} bits at 0..{len(after) - 1} steps after")
    if "advantage" in result:
        lines.append(advantage_line(result["runs"], result["advantage"]))
    return lines
