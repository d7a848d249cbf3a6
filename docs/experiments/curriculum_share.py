"""How much of sequential training incremental (curriculum) training reads.

    ZOO_DATA_DIR=../shared/data python docs/experiments/curriculum_share.py [EPOCHS]

For the paper-scale D2 recipe (`recognition_d2_diffstk_rnn --scale paper`)
with `train.curriculum=true`: the per-epoch length limits
(`training.data.batching.curriculum_limits`), and the share of string presentations
and of symbols that EPOCHS epochs of incremental training read, against
EPOCHS epochs of every string (sequential).
"""

import sys

from training import recipes
from training.data.batching import curriculum_limits
from training.tasks import make_task

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
recipe = recipes.resolve(
    "recognition_d2_diffstk_rnn",
    "paper",
    [f"train.epochs={epochs}", "train.curriculum=true"],
)
train = make_task(recipe).arrays["train"]
lengths = (train.inputs != 0).sum(axis=1)
limits = curriculum_limits(lengths, epochs)
strings = sum(int((lengths <= limit).sum()) for limit in limits)
symbols = sum(int(lengths[lengths <= limit].sum()) for limit in limits)
print(f"length limits per epoch: {limits.tolist()}")
print(f"string presentations: {strings / (epochs * len(lengths)):.1%} of sequential's")
print(f"symbols: {symbols / (epochs * lengths.sum()):.1%} of sequential's")
