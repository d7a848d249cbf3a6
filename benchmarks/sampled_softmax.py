r"""A training step of a `so_wikitext2` row with and without a sampled softmax.

Builds the row's model (hidden size 64, embeddings 64, batch 64 x 70,
WikiText-2's 33,278 words) as `python -m training.train` does, compiles it
as `training.core.fitting.fit` does (XLA by the recipe's rule, all steps of an
epoch in one call), trains two epochs of STEPS steps on the training data
and prints the second epoch's wall and CPU time per step; then one full
validation pass (the full softmax, as `val_loss`), timed the same way.
N is `train.sampled_softmax` (0: the full softmax). CPU time is the
measure on a shared machine; run it on one thread, as the tables' runs are:

    TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 OMP_NUM_THREADS=1 \
        ZOO_DATA_DIR=../shared/data PYTHONPATH=. \
        python benchmarks/sampled_softmax.py ROW STEPS N [ptb_char]

ROW is `lstm`, `so2` or `so5` (the table's three rows); `ptb_char` trains
the same shape on PTB characters (51 symbols) instead: what the step costs
without a large decoder.
"""

import sys
import time

import keras

from training.core import compile_mode, fitting
from training.tasks import make_task, recipes

ROWS = {
    "lstm": ["model.cell=lstm", "model.options={}", "train.temperature_factor=null"],
    "so2": ['model.options={"num_cells": 2}', "train.eval_temperature=0.01"],
    "so5": ['model.options={"num_cells": 5}', "train.eval_temperature=0.01"],
}
SHARED = ["model.units=64", "model.embedding_dim=64", "train.learning_rate=1e-3"]


class EpochTimes(keras.callbacks.Callback):
    """Wall and CPU seconds of each epoch."""

    def __init__(self):
        super().__init__()
        self.times = []

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter(), time.process_time()

    def on_epoch_end(self, epoch, logs=None):
        wall, cpu = self.start
        self.times.append((time.perf_counter() - wall, time.process_time() - cpu))


def main(row, steps, sampled, corpus="wikitext2"):
    overrides = [*ROWS[row], *SHARED, f"train.sampled_softmax={sampled}"]
    if corpus == "ptb_char":
        overrides += ["task.corpus=ptb", "task.level=char"]
    recipe = recipes.resolve("wikitext2_second_order_lstm", "paper", overrides)
    keras.utils.set_random_seed(0)
    task = make_task(recipe)
    model = task.training_model(task.build_model())
    jit = compile_mode.for_task(task).used
    model.compile(
        optimizer=fitting.make_optimizer(recipe.train, steps),
        **task.compile_arguments(),
        jit_compile=jit,
        steps_per_execution=steps if jit else 1,
    )
    data, callbacks = task.train_data()
    timer = EpochTimes()
    model.fit(
        data.repeat(),
        epochs=2,
        steps_per_epoch=steps,
        callbacks=[timer, *callbacks],
        verbose=0,
    )
    validation = task.validation_data()
    model.evaluate(validation, steps=2, verbose=0)  # compiles
    start = time.perf_counter(), time.process_time()
    loss = model.evaluate(validation, verbose=0)
    wall, cpu = time.perf_counter() - start[0], time.process_time() - start[1]
    step_wall, step_cpu = timer.times[1]
    name = row if corpus == "wikitext2" else f"{row} {corpus}"
    print(
        f"{name} N={sampled} XLA={jit}: step "
        f"{1000 * step_wall / steps:.0f} ms wall / "
        f"{1000 * step_cpu / steps:.0f} ms CPU; validation pass {wall:.0f} s "
        f"wall / {cpu:.0f} s CPU (val_loss {loss:.3f})"
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:])
