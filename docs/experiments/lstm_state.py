r"""How much a stateful PTB-word language model's loss depends on the state
it carried through training (research script, not part of the library).

    ZOO_DATA_DIR=../shared/data python docs/experiments/lstm_state.py \
        CELL STEPS BATCH LR [RESET_EVERY]

Trains the `ptb_word_lstm` recipe's model with `CELL` for STEPS truncated-BPTT
batches of BATCH rows (state carried from batch to batch, as `training.train`
does within an epoch; with RESET_EVERY, zeroed every that many batches), then
scores the validation split twice: from a zero state, as `fit`'s validation
and `training.evaluate` do, and from the state training ended with. Prints
the mean absolute state and both losses (nats). At batch 64 a PTB training
row is about 14,500 tokens long and is zeroed only at the epoch's start.
"""

import sys

import keras
import numpy as np

import zoo
from training import tasks
from training.tasks import recipes

cell, steps, batch, learning_rate = sys.argv[1:5]
steps, batch, learning_rate = int(steps), int(batch), float(learning_rate)
reset_every = int(sys.argv[5]) if len(sys.argv) > 5 else 0
recipe = recipes.resolve(
    "ptb_word_lstm", "paper", [f"train.batch_size={batch}", f"model.cell={cell}"]
)
task = tasks.make_task(recipe)
x, y = task._tbptt("train")
valid_x, valid_y = task._tbptt("valid")
keras.utils.set_random_seed(0)
model = task.build_model()
model.compile(
    optimizer=keras.optimizers.Adam(learning_rate, global_clipnorm=3.5),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
)
rnn = next(layer for layer in model.layers if getattr(layer, "stateful", False))


def state_sizes():
    return " ".join(
        f"|state {i}| mean {np.mean(np.abs(s.numpy())):.3f} max "
        f"{np.max(np.abs(s.numpy())):.2f}"
        for i, s in enumerate(rnn.states)
    )


losses = []
for step in range(steps):
    if reset_every and step % reset_every == 0:
        zoo.reset_states(model)
    losses.append(float(model.train_on_batch(x[step], y[step])))
print(f"{cell}: {steps} steps, last-20 train loss {np.mean(losses[-20:]):.3f}")
print("state at the end of training:", state_sizes())
carried = [s.numpy() for s in rnn.states]


def validation_loss():
    return np.mean(
        [
            float(model.test_on_batch(valid_x[j], valid_y[j]))
            for j in range(len(valid_x))
        ]
    )


zoo.reset_states(model)
print(f"validation from a zero state: {validation_loss():.3f}")
for state, value in zip(rnn.states, carried, strict=True):
    state.assign(value)
print(f"validation from the carried state: {validation_loss():.3f}")
