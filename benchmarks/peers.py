"""The zoo's whole training loop against Keras on JAX and PyTorch, over widths.

    PYTHONPATH=. python benchmarks/peers.py [--units 8 16 32 64 128 256]
        [--shapes recognizer lm] [--rows xla xla_data graph jax torch torch_loop]
        [--cells mlstm mmlstm] [--cell-units 256] [--batches 64] [--epochs 3]
        [--rounds 2] [--keras-loop] [--one-core [ROW ...]] [--save FILE]
        [--report FILE]

Three shapes, batch 32, random data:
- `recognizer`: `zoo.recognizer("lstm", vocab_size=6, units=U,
  embedding_dim=8)` with `zoo.hybrid_recognition_loss()`, Adam 2e-3
  with clipvalue 15, length 55 (ids 1-5, each row 28-55 long, padded with 0).
- `lm`: `zoo.language_model("lstm", 50, U, embedding_dim=min(U, 32))`,
  sparse cross-entropy on the logits, the same Adam, length 128;
- `wide_lm` (not in the default `--shapes`): `lm` with `embedding_dim=U`,
  inputs as wide as the state, as in `benchmarks/cells.py`.

Rows (each trains `--epochs` epochs of `--batches` batches; a step's time is
the best epoch from the second on, in wall and in CPU seconds):
- `xla`: the zoo model on TensorFlow compiled with `jit_compile=True` and the
  steps a call (`steps_per_execution`) that `training.train` would group
  under XLA (`training.core.compile_mode.choose_steps`: 32 for a step with
  `batch x units x length <= CPU_XLA_LIMIT`, else 1);
- `xla_data`: the `xla` row fed a `tf.data.Dataset` of the same batches,
  `from_tensor_slices(...).batch(32).repeat()`, with `steps_per_epoch` set:
  Keras then makes one iterator for the whole `fit`, where with NumPy arrays
  its TensorFlow trainer builds a `tf.data` pipeline that makes two
  iterators an epoch and slices each batch in a mapped function
  (benchmarks/log.md, "What is left at 8-32 units");
- `graph`: the same with `jit_compile=False`, one step a call;
- `zoo default`: not run on its own but read from those two: what
  `training.train` uses, `zoo.default_jit_compile(units, batch, length)` and
  `training.core.compile_mode.choose_steps` (32 steps a call under XLA, else 1);
- `keras_loop` (`--keras-loop`): the `xla` row with
  `zoo.backbone.tensorflow_loop` and `zoo.models.tensorflow_steps` replaced
  by the identity before the model is built, i.e. Keras's own TensorFlow
  loop and train function, as before issue 39's fixes;
- `jax`: the same zoo model under `KERAS_BACKEND=jax`, `jit_compile=True`,
  32 steps a call;
- `torch`: PyTorch's fused `nn.LSTM` with the same embedding and heads, Adam,
  `clip_grad_value_(15)`, `loss.item()` each step;
- `torch_loop`: the same with an `nn.LSTMCell` called in a Python loop;
- `--cells` at `--cell-units` (default mLSTM and mmLSTM with k = 4 at 256):
  the zoo default only, next to the LSTM's, with the cell's FLOP share of
  the LSTM at that shape (the multiply-adds of the recurrent cell's
  weights of rank 2 or more, as `benchmarks/cells.py` counts it) and its
  time over that share.

The recognizer's PyTorch loss is Keras's: cross-entropy on the next symbol
plus 0.5 x the squared error of the sigmoid acceptance, both averaged over
the unpadded steps; the padding is at the end of a row, so the LSTM runs over
it unpacked, as Keras's masked loop computes it (keeping the state).

Every row runs in its own process (`sys.executable` with `--worker`;
TensorFlow and torch in one process end in a segmentation fault here), one
thread each (TensorFlow's intra- and inter-op pools, XLA's CPU runtime
without Eigen threads, `torch.set_num_threads(1)`), and the rows take turns
within each of `--rounds` rounds, so load on a shared machine falls on all
alike. With `--one-core` each row's process is also held to one CPU core
(`os.sched_setaffinity`, the first core it may use), so no framework can run
work beside its step on another core: Keras on JAX otherwise uses 1.15-1.7
cores' CPU time per wall second here (it dispatches a step asynchronously,
and at 256 units its XLA runtime runs work of one step on a second core,
which the one-thread flags do not stop). `--one-core ROW ...` holds only
the rows named (`--one-core jax`: JAX's process held to the one core that
the flags give the others' compute).
Printed: the best ms/step (wall and CPU) of each row over rounds,
the ratio of each row's CPU time to `nn.LSTM`'s and to JAX's, and the load
average at the start and the end. `--save` writes the results, and
`--report` prints a saved run's tables again (with the rule as it is now).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BATCH = 32
SHAPES = {  # name -> (vocabulary, length)
    "recognizer": (6, 55),
    "lm": (50, 128),
    "wide_lm": (50, 128),
}


def embedding_dim(shape, units):
    """The embedding width of `shape`'s models at `units` units."""
    return {"recognizer": 8, "lm": min(units, 32), "wide_lm": units}[shape]


ROWS = ("xla", "xla_data", "graph", "jax", "torch", "torch_loop")
LABELS = {
    "default": "zoo default",
    "xla": "zoo TF XLA",
    "xla_data": "zoo XLA tf.data",
    "graph": "zoo TF graph",
    "keras_loop": "Keras TF loop",
    "jax": "Keras on JAX",
    "torch": "torch nn.LSTM",
    "torch_loop": "torch LSTMCell",
}
CELL_OPTIONS = {"lstm": {}, "mlstm": {}, "mmlstm": {"num_choices": 4}}
# XLA reads no flag of an `XLA_FLAGS` that holds a word which is not one
# (until this round it also held `intra_op_parallelism_threads=1`, which
# made XLA ignore the whole string).
ONE_THREAD = {
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false",
    "OMP_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "2",
}


def data(shape, batches, seed=0):
    """`(ids, next_ids, labels)` NumPy arrays of `batches` batches of `shape`."""
    import numpy as np

    vocabulary, length = SHAPES[shape]
    rng = np.random.default_rng(seed)
    rows = batches * BATCH
    ids = rng.integers(1, vocabulary, (rows, length)).astype("int32")
    if shape == "recognizer":
        lengths = rng.integers(28, length + 1, rows)
        ids[np.arange(length)[None, :] >= lengths[:, None]] = 0
        next_ids = np.zeros_like(ids)
        next_ids[:, :-1] = ids[:, 1:]
    else:
        next_ids = rng.integers(1, vocabulary, (rows, length)).astype("int32")
    labels = rng.integers(0, 2, rows).astype("float32")
    return ids, next_ids, labels


def default_settings(units, length, batches):
    """`(jit_compile, steps_per_execution)` that `training.train` would use."""
    import zoo
    from training.core import compile_mode

    jit = bool(zoo.default_jit_compile(units, BATCH, length))
    steps = compile_mode.choose_steps("auto", jit, (units, BATCH, length), batches)
    return jit, steps.used


class EpochClock:
    """Wall and CPU seconds of each epoch (a Keras callback, made lazily)."""

    def __init__(self):
        self.wall, self.cpu = [], []

    def begin(self):
        self._start = (time.perf_counter(), time.process_time())

    def end(self):
        self.wall.append(time.perf_counter() - self._start[0])
        self.cpu.append(time.process_time() - self._start[1])


def run_keras(row, shape, cell, units, batches, epochs):
    import keras

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.get_logger().setLevel("ERROR")
    import zoo
    import zoo.models

    vocabulary, length = SHAPES[shape]
    if row == "graph":
        jit, steps = False, 1
    elif row == "jax":
        jit, steps = True, min(32, batches)  # training.core.compile_mode.AUTO_STEPS
    else:  # XLA with the steps a call training.train would group
        from training.core import compile_mode

        jit = True
        shape_of_step = (units, BATCH, length)
        steps = compile_mode.choose_steps("auto", True, shape_of_step, batches).used
    if row == "keras_loop":
        zoo.backbone.tensorflow_loop = zoo.models.tensorflow_steps = lambda x: x
    keras.utils.set_random_seed(0)
    options = CELL_OPTIONS[cell]
    optimizer = keras.optimizers.Adam(2e-3, clipvalue=15.0)
    ids, next_ids, labels = data(shape, batches)
    if shape == "recognizer":
        model = zoo.recognizer(
            cell,
            vocabulary,
            units,
            embedding_dim=embedding_dim(shape, units),
            **options,
        )
        model.compile(
            optimizer,
            **zoo.hybrid_recognition_loss(),
            jit_compile=jit,
            steps_per_execution=steps,
        )
        targets = zoo.recognition_targets(ids, labels)
    else:
        model = zoo.language_model(
            cell,
            vocabulary,
            units,
            embedding_dim=embedding_dim(shape, units),
            **options,
        )
        model.compile(
            optimizer,
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=jit,
            steps_per_execution=steps,
        )
        targets = next_ids
    clock = EpochClock()
    callback = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda *_: clock.begin(), on_epoch_end=lambda *_: clock.end()
    )
    if row == "xla_data":  # one iterator for the whole fit
        import tensorflow as tf

        dataset = tf.data.Dataset.from_tensor_slices((ids, targets))
        inputs = {"x": dataset.batch(BATCH).repeat(), "steps_per_epoch": batches}
    else:
        inputs = {"x": ids, "y": targets, "batch_size": BATCH, "shuffle": False}
    history = model.fit(**inputs, epochs=epochs, verbose=0, callbacks=[callback])
    if jit and model.jit_compile is not True:
        raise SystemExit(f"{row}: Keras refused jit_compile=True")
    loss = history.history["loss"][-1]
    settings = {"jit_compile": jit, "steps_per_execution": steps}
    return clock, loss, {**settings, "multiply_adds": multiply_adds(model)}


def multiply_adds(model):
    """Multiply-adds per example and step of `model`'s recurrent cell, as
    `benchmarks/cells.py` counts a cell's FLOP share (`cells.multiply_adds`:
    its weights of rank 2 or more, each one product with the step's input or
    state)."""
    import keras
    from cells import multiply_adds as cell_multiply_adds

    from zoo.walk import walk_layers

    cell = next(
        layer.cell
        for layer in walk_layers(model)
        if isinstance(layer, keras.layers.RNN)
    )
    return cell_multiply_adds(cell)


def run_torch(row, shape, units, batches, epochs):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    vocabulary, length = SHAPES[shape]
    width = embedding_dim(shape, units)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = torch.nn.Embedding(vocabulary, width)
            if row == "torch":
                self.lstm = torch.nn.LSTM(width, units, batch_first=True)
            else:
                self.cell = torch.nn.LSTMCell(width, units)
            self.next_symbol = torch.nn.Linear(units, vocabulary)
            self.accept = torch.nn.Linear(units, 1)

        def forward(self, ids):
            x = self.embedding(ids)  # [batch, time, embedding]
            if row == "torch":
                h = self.lstm(x)[0]
            else:
                state = None
                outputs = []
                for t in range(x.shape[1]):
                    state = self.cell(x[:, t], state)
                    outputs.append(state[0])
                h = torch.stack(outputs, dim=1)  # [batch, time, units]
            return self.next_symbol(h), self.accept(h)[..., 0]

    model = Model()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    ids, next_ids, labels = (torch.from_numpy(a) for a in data(shape, batches))
    next_ids = next_ids.long()

    def loss_of(i):
        rows = slice(i * BATCH, (i + 1) * BATCH)
        logits, accept = model(ids[rows])
        cross_entropy = torch.nn.functional.cross_entropy(
            logits.transpose(1, 2), next_ids[rows], reduction="none"
        )  # [batch, time]
        if shape != "recognizer":
            return cross_entropy.mean()
        mask = (ids[rows] != 0).float()
        squared = (torch.sigmoid(accept) - labels[rows, None]) ** 2
        return ((cross_entropy + 0.5 * squared) * mask).sum() / mask.sum()

    clock = EpochClock()
    for _ in range(epochs):
        clock.begin()
        for i in range(batches):
            optimizer.zero_grad()
            loss = loss_of(i)
            loss.backward()
            torch.nn.utils.clip_grad_value_(model.parameters(), 15.0)
            optimizer.step()
            value = loss.item()
        clock.end()
    return clock, value, {}


def worker(args):
    """Runs one row over its configurations; prints a JSON line for each."""
    for shape in args.shapes:
        for cell, units in configurations(args, shape):
            if args.worker.startswith("torch"):
                if cell != "lstm":
                    continue
                clock, loss, settings = run_torch(
                    args.worker, shape, units, args.batches, args.epochs
                )
            else:
                clock, loss, settings = run_keras(
                    args.worker, shape, cell, units, args.batches, args.epochs
                )
            later = slice(1, None)  # the first epoch traces and compiles
            result = {
                "row": args.worker,
                "shape": shape,
                "cell": cell,
                "units": units,
                "wall_ms": 1e3 * min(clock.wall[later]) / args.batches,
                "cpu_ms": 1e3 * min(clock.cpu[later]) / args.batches,
                "loss": float(loss),
                **settings,
            }
            print(json.dumps(result), flush=True)


def configurations(args, shape):
    """`(cell, units)` of a row: the LSTM at every width, and `--cells` at
    `--cell-units` in the two TensorFlow rows the zoo default reads."""
    cells = [("lstm", units) for units in args.units]
    if args.worker in ("xla", "graph"):
        cells += [(cell, args.cell_units) for cell in args.cells]
    return cells


def run_row(row, args):
    environment = {**os.environ, **ONE_THREAD}
    core = min(os.sched_getaffinity(0))

    def hold_to_one_core():  # in the child, before it starts
        os.sched_setaffinity(0, {core})

    environment["KERAS_BACKEND"] = "jax" if row == "jax" else "tensorflow"
    command = [
        sys.executable,
        __file__,
        "--worker",
        row,
        "--units",
        *map(str, args.units),
        "--shapes",
        *args.shapes,
        "--cells",
        *args.cells,
        "--cell-units",
        str(args.cell_units),
        "--batches",
        str(args.batches),
        "--epochs",
        str(args.epochs),
    ]
    done = subprocess.run(
        command,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=hold_to_one_core if held(row, args) else None,
    )
    if done.returncode:
        raise SystemExit(
            f"row {row} failed ({done.returncode}):\n{done.stderr[-3000:]}"
        )
    return [json.loads(line) for line in done.stdout.splitlines() if line[:1] == "{"]


def held(row, args):
    """Whether `--one-core` holds `row`'s process to one core."""
    return args.one_core is not None and (not args.one_core or row in args.one_core)


def load():
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--units", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256]
    )
    parser.add_argument(
        "--shapes", nargs="+", choices=list(SHAPES), default=["recognizer", "lm"]
    )
    parser.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS))
    parser.add_argument("--cells", nargs="*", default=["mlstm", "mmlstm"])
    parser.add_argument("--cell-units", type=int, default=256)
    parser.add_argument("--batches", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--keras-loop", action="store_true")
    parser.add_argument(
        "--one-core",
        nargs="*",
        choices=ROWS,
        metavar="ROW",
        help="hold each row's process (or only the ROWs named) to one core",
    )
    parser.add_argument("--save", help="write every row's results to this JSON file")
    parser.add_argument(
        "--report", help="print the tables of a --save file (the rule as it is now)"
    )
    parser.add_argument(
        "--worker", choices=[*ROWS, "keras_loop"], help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.epochs < 2:
        parser.error("--epochs must be at least 2 (the first compiles)")
    if args.worker:
        return worker(args)
    if args.report:
        saved = json.loads(Path(args.report).read_text())
        args = argparse.Namespace(**saved["args"])
        best = {tuple(result["key"]): result for result in saved["results"]}
        return report(with_default(best, args), saved["rows"], args)

    from training.core import compile_mode

    rows = [*args.rows, *(["keras_loop"] if args.keras_loop else [])]
    print(
        f"{compile_mode.cpu_name()} ({' '.join(compile_mode.cpu_features())}), "
        f"{os.cpu_count()} cores; load average {load()} at the start"
        + ("; each row held to one core" if args.one_core == [] else "")
        + (f"; held to one core: {', '.join(args.one_core)}" if args.one_core else "")
    )
    best = {}  # (row, shape, cell, units) -> {"wall_ms": best, "cpu_ms": best}
    started = time.perf_counter()
    for index in range(args.rounds):
        for row in rows:
            for result in run_row(row, args):
                key = (row, result["shape"], result["cell"], result["units"])
                print(
                    f"  {row} {result['shape']} {result['cell']} {result['units']}: "
                    f"{result['wall_ms']:.2f} / {result['cpu_ms']:.2f} ms, "
                    f"loss {result['loss']:.4f}",
                    flush=True,
                )
                kept = best.setdefault(key, result)
                for column in ("wall_ms", "cpu_ms"):
                    kept[column] = min(kept[column], result[column])
        print(f"round {index + 1}: {time.perf_counter() - started:.0f} s", flush=True)
    if args.save:
        results = [{**result, "key": key} for key, result in best.items()]
        saved = {"args": vars(args), "rows": rows, "results": results}
        Path(args.save).write_text(json.dumps(saved, indent=1))
    report(with_default(best, args), rows, args)
    print(f"load average {load()} at the end; {time.perf_counter() - started:.0f} s")


def with_default(best, args):
    """`best` with the zoo default's rows: the TensorFlow rows it would run."""
    best = dict(best)
    for (row, shape, cell, units), result in list(best.items()):
        jit, steps = default_settings(units, SHAPES[shape][1], args.batches)
        if row in ("xla", "graph") and (row == "xla") == jit:
            if result["steps_per_execution"] != steps:
                raise SystemExit(f"{row} ran {result} where the default runs {steps}")
            best["default", shape, cell, units] = result
    return best


def report(best, rows, args):
    shown = ["default", *rows]
    for shape in args.shapes:
        vocabulary, length = SHAPES[shape]
        print(
            f"\n{shape}: lstm, batch {BATCH}, length {length}, vocabulary "
            f"{vocabulary}; {args.batches} batches an epoch, best of epochs "
            f"2-{args.epochs} over {args.rounds} rounds; ms/step wall / CPU"
        )
        print(f"{'units':<16}" + "".join(f"{units:>15}" for units in args.units))

        def line(label, cell):
            print(
                f"{label:<16}" + "".join(f"{cell(units):>15}" for units in args.units)
            )

        def get(row, units, cell="lstm", shape=shape):
            return best.get((row, shape, cell, units))

        for row in shown:
            line(
                LABELS[row],
                lambda u, row=row: (
                    f"{get(row, u)['wall_ms']:.2f} / {get(row, u)['cpu_ms']:.2f}"
                    if get(row, u)
                    else "-"
                ),
            )
        line(
            "default is",
            lambda u, length=length: (
                "XLA x{1}" if default_settings(u, length, args.batches)[0] else "graph"
            ).format(*default_settings(u, length, args.batches)),
        )
        for peer in ("torch", "jax"):
            if peer not in rows:
                continue
            print(
                f"CPU time of {LABELS[peer]} over each row's "
                "(above 1: the row is faster)"
            )
            for row in shown:
                if row == peer:
                    continue
                line(
                    f"  {LABELS[row]}",
                    lambda u, row=row, peer=peer: (
                        f"{get(peer, u)['cpu_ms'] / get(row, u)['cpu_ms']:.2f}x"
                        if get(row, u) and get(peer, u)
                        else "-"
                    ),
                )
        lstm = get("default", args.cell_units)
        for cell in args.cells:
            result = get("default", args.cell_units, cell)
            if result and lstm:
                ratio = result["cpu_ms"] / lstm["cpu_ms"]
                share = ""
                if "multiply_adds" in result and "multiply_adds" in lstm:
                    flops = result["multiply_adds"] / lstm["multiply_adds"]
                    share = (
                        f"; FLOP share {flops:.2f}x at this shape, "
                        f"time {ratio / flops:.2f}x the share"
                    )
                print(
                    f"zoo default {cell} at {args.cell_units} units: "
                    f"{result['wall_ms']:.2f} / {result['cpu_ms']:.2f} ms/step, "
                    f"{ratio:.2f}x the LSTM's CPU time{share}"
                )


if __name__ == "__main__":
    main()
