"""Splits a Dyck language model's excess over the oracle into END and brackets.

    python docs/experiments/end_excess.py RUN_DIR [RUN_DIR ...] [--split test]

A model's cross-entropy per token minus the generator's (the oracle's,
`training.data.dyck_oracle`) is the run's `excess_over_oracle`. Every
token's log-probability splits exactly into two decisions: whether the
string ends here, `log P(END)` or `log (1 - P(END))`, and, when it goes on,
which bracket comes, `log P(token | not END)`. So the excess is the sum of

- `end`: the excess on the stop-or-go decision, at every token;
- `bracket`: the excess on the bracket given that the string goes on.

Each part is shown at the positions up to the longest training string
(`within`) and beyond it (`beyond`), as a mean over all of the split's
counted tokens (the parts add up to the run's excess). Hewitt's test strings
are longer than any training string, so a model trained on them never saw
a string go on past the training length, while the test oracle knows the
test's lengths. The last line of each run gives the floor of a model that
knows the training's shortest length instead of the split's: the
generator with that minimum length, scored on the same strings. If the END
decision carries the test excess, and the excess is that floor's, the
excess measures the length shift, not the stack.
Needs each run's best model and recipe (no files of data read).
"""

import argparse
import sys
from pathlib import Path

import keras
import numpy as np

from training.data import dyck_oracle, dyck_strings
from training.runs import runs


def parts(run, split):
    """`{part: nats per counted token}` of one finished run on `split`."""
    task = run.task
    arrays = task.arrays[split]
    oracle = task.oracle(split)
    logits = task._predict(run.model, arrays.inputs)
    log_p = np.asarray(keras.ops.log_softmax(keras.ops.cast(logits, "float64"), -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_q = oracle.log_probabilities(arrays)
    targets = np.asarray(arrays.targets)
    weights = np.asarray(arrays.mask, dtype=np.float64)
    end = dyck_strings.END_ID

    def decisions(log_probs):
        token = np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
        log_end = log_probs[..., end]
        log_go = np.log1p(-np.exp(np.minimum(log_end, -1e-300)))
        is_end = targets == end
        stop_or_go = np.where(is_end, log_end, log_go)
        bracket = np.where(is_end, 0.0, token - log_go)
        return stop_or_go, bracket

    with np.errstate(divide="ignore", invalid="ignore"):  # -inf on padding
        model_end, model_bracket = decisions(log_p)
        oracle_end, oracle_bracket = decisions(log_q)
    longest = task.oracle("train").max_length
    beyond = np.broadcast_to(np.arange(targets.shape[1]) >= longest, targets.shape)
    total = weights.sum()
    result = {}
    for name, model_part, oracle_part in (
        ("end", model_end, oracle_end),
        ("bracket", model_bracket, oracle_bracket),
    ):
        excess = np.where(weights > 0, oracle_part - model_part, 0.0) * weights
        result[f"{name} within"] = float(excess[~beyond].sum() / total)
        result[f"{name} beyond"] = float(excess[beyond].sum() / total)
    result["excess"] = sum(result.values())
    # The floor of a model that knows the training's shortest string, not
    # the split's: the generator with the training's minimum length and the
    # split's maximum, scored on the same strings.
    unaware = dyck_oracle.DyckOracle(
        oracle.k, oracle.m, task.oracle("train").min_length, oracle.max_length
    )
    result["unaware"] = unaware.cross_entropy(arrays) - oracle.cross_entropy(arrays)
    result["beyond share"] = float(weights[beyond].sum() / total)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--split", default="test")
    args = parser.parse_args(argv)
    names = ("end within", "end beyond", "bracket within", "bracket beyond")
    print(f"{args.split}: excess over the oracle, nats per counted token")
    print(f"{'run':<48}" + "".join(f"{n:>15}" for n in (*names, "excess")))
    for run_dir in args.runs:
        found = parts(runs.load_run(run_dir), args.split)
        label = "/".join(run_dir.parts[-2:])
        print(
            f"{label:<48}" + "".join(f"{found[n]:>15.4f}" for n in (*names, "excess"))
        )
        share, unaware = found["beyond share"], found["unaware"]
        print(f"{'':<48}tokens beyond the longest training string: {share:.1%}")
        print(
            f"{'':<48}the generator with the training's shortest length: "
            f"{unaware:.4f} above the oracle"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
