"""How much of sequential training incremental (curriculum) training reads.

    ZOO_DATA_DIR=../shared/data \
        python docs/experiments/curriculum_share.py [EPOCHS [SEED]]

For the paper-scale D2 recipe (`recognition_d2_diffstk_rnn_paper --scale paper`)
with `train.curriculum=true` and `train.seed=SEED` (default 0): the
per-epoch length limits (`training.data.batching.curriculum_limits`), and
the share of string presentations and of symbols that EPOCHS epochs of
incremental training read, against EPOCHS epochs of every string
(sequential). Then each epoch's batches
(`Task.epoch_steps`, what `training.core.fitting.fit_epoch_lengths` trains), and
for the runs from before it (one `model.fit` call, whose later epochs Keras
stopped at the first epoch's count plus one; batches then kept a last
partial batch) the batches an epoch held and the batches it trained.
"""

import math
import sys

from training.data.batching import curriculum_limits
from training.tasks import make_task, recipes

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
recipe = recipes.resolve(
    "recognition_d2_diffstk_rnn_paper",
    "paper",
    [f"train.epochs={epochs}", "train.curriculum=true", f"train.seed={seed}"],
)
task = make_task(recipe)
train = task.arrays["train"]
lengths = (train.inputs != 0).sum(axis=1)
limits = curriculum_limits(lengths, epochs)
strings = sum(int((lengths <= limit).sum()) for limit in limits)
symbols = sum(int(lengths[lengths <= limit].sum()) for limit in limits)
print(f"length limits per epoch: {limits.tolist()}")
print(f"string presentations: {strings / (epochs * len(lengths)):.1%} of sequential's")
print(f"symbols: {symbols / (epochs * lengths.sum()):.1%} of sequential's")

batch = recipe.train.batch_size
steps = task.epoch_steps()
print(f"batches of {batch} per epoch: {list(steps)} ({sum(steps)} in all)")
task_limits = curriculum_limits(train.lengths, epochs)  # as the task counts lengths
admitted = [int((train.lengths <= limit).sum()) for limit in task_limits]
held = [math.ceil(count / batch) for count in admitted]
trained = [held[0]] + [min(count, held[0] + 1) for count in held[1:]]
print(
    f"before the fix, held: {held} ({sum(held)}); trained: {trained} "
    f"({sum(trained)}, {sum(trained) / sum(held):.0%})"
)
