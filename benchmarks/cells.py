"""Training throughput of every zoo cell next to keras.layers.LSTM.

    python benchmarks/cells.py [--units 256] [--batch 32] [--steps 3]
        [--lengths 128 2048] [--cells mlstm mrnn ...] [--xla-lengths 512 2048]
        [--policy float32] [--no-cudnn]

In one process, for each cell (and each variant below): a model of one
recurrent layer (inputs of `units` features, or token ids for cells that read
ids) is trained with `train_on_batch` on a mean-squared-error loss; after one
warm-up step, `--steps` steps are timed and the median counts. The reference,
keras.layers.LSTM at the same units, batch and lengths, is timed before and
after the cells and the faster of the two is used. Printed per cell: tokens/s
at each length, the step time relative to that LSTM at the longest length,
the cell's FLOP share of the LSTM (its multiply-adds per step over the
LSTM's, from the weights a step uses), and throughput at the longest length
over the shortest. Targets: time ratio <= 1.1 x FLOP share, length
ratio >= 0.8. `--xla-lengths` first times keras.layers.LSTM with and without
`jit_compile` (the compile-mode choice of `zoo.default_jit_compile`; on the
TensorFlow backend only: JAX compiles every step). `--policy` is the
`keras.mixed_precision` policy every model is built under. `--no-cudnn`
builds the reference with `use_cudnn=False`, the generic loop the zoo cells
run in: on the JAX backend cuDNN's RNN kernel takes no bfloat16 (jaxlib
0.11: "Unknown output type bfloat16").

The script runs on any Keras 3 backend (`KERAS_BACKEND=jax`), which is how
the GPU numbers in benchmarks/log.md were taken.
"""

import argparse
import contextlib
import time
from unittest import mock

import keras
import numpy as np

import zoo
from zoo.cells import multi_matrix
from zoo.devices import gpu_visible


def naive_mixed_transition(h_prev, choice_kernels, keys):
    """`W_hh(t) h_{t-1}` with each example's `[units, units]` matrix built first.

    The form `zoo.cells.multi_matrix.key_mixed_transition` avoids; the
    benchmark swaps it in to time both.
    """
    groups, k = keys.shape[-2], keys.shape[-1]
    units = choice_kernels.shape[0]
    matrices = keras.ops.reshape(choice_kernels, (units, groups, k, units))
    per_example = keras.ops.einsum("bgk,igko->bgio", keys, matrices)  # [b, g, u, u]
    mixed = keras.ops.einsum("bi,bgio->bgo", h_prev, per_example)
    return keras.ops.reshape(mixed, (-1, groups * units))


# Extra configurations beside each registered cell's defaults, when registered.
VARIANTS = [
    ("min_gru[parallel]", "min_gru", {"mode": "parallel"}),
    ("min_lstm[parallel]", "min_lstm", {"mode": "parallel"}),
    *[(f"mmlstm[k={k}]", "mmlstm", {"num_choices": k}) for k in (1, 2, 4, 8)],
    ("mmlstm[k=4, naive]", "mmlstm", {"num_choices": 4}),
    *[
        (f"{name}[depth={depth}]", name, {"stack_depth": depth})
        for name in ("stack_rnn", "diffstk_rnn", "diffstk_lstm")
        for depth in (16, 64, 256)
    ],
]
# Variants that replace a library function while they are built and traced.
REPLACED = {
    "mmlstm[k=4, naive]": (multi_matrix, "key_mixed_transition", naive_mixed_transition)
}
ID_VOCAB = 7  # the Dyck-2 token layout: ids 0..6


def build_model(layer, batch, length, units, takes_ids):
    if takes_ids:
        inputs = keras.Input(batch_shape=(batch, length, 1), dtype="int32")
    else:
        inputs = keras.Input(batch_shape=(batch, length, units))
    return keras.Model(inputs, layer(inputs))


def time_training(make_layer, batch, length, units, steps, jit_compile, takes_ids):
    keras.utils.set_random_seed(0)
    model = build_model(make_layer(), batch, length, units, takes_ids)
    model.compile(optimizer="adam", loss="mse", jit_compile=jit_compile)
    rng = np.random.default_rng(0)
    if takes_ids:
        x = rng.integers(0, ID_VOCAB, (batch, length, 1)).astype("int32")
    else:
        x = rng.normal(size=(batch, length, units)).astype("float32")
    y = np.zeros(model.output_shape, "float32")
    model.train_on_batch(x, y)  # traces and compiles
    seconds = []
    for _ in range(steps):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        seconds.append(time.perf_counter() - start)
    return batch * length / float(np.median(seconds))


def flops_per_step(cell, units):
    """Multiply-adds of the weight matrices one step uses, per example."""
    cell.build((None, units if not getattr(cell, "takes_token_ids", False) else 1))
    return multiply_adds(cell)


def multiply_adds(cell):
    """Multiply-adds per example of one step of a built `cell`'s weight matrices
    (`peers.py` counts its models' cells with it too)."""
    if isinstance(cell, zoo.get_cell_class("tensor_rnn")):
        # Every symbol's matrix, or one gathered matrix per example.
        dense = cell.vocab_size <= cell.DENSE_VOCAB_LIMIT
        return cell.units * cell.units * (cell.vocab_size if dense else 1)
    return sum(
        int(np.prod(w.shape)) for w in cell.trainable_weights if len(w.shape) >= 2
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 2048])
    parser.add_argument("--cells", nargs="+", default=None)
    parser.add_argument("--xla-lengths", type=int, nargs="*", default=[512, 2048])
    parser.add_argument("--policy", default="float32")
    parser.add_argument("--no-cudnn", action="store_true")
    args = parser.parse_args()
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        tf.get_logger().setLevel("ERROR")  # one model per configuration retraces
    keras.mixed_precision.set_global_policy(args.policy)
    units, batch = args.units, args.batch

    def lstm_layer():
        use_cudnn = False if args.no_cudnn else "auto"
        return keras.layers.LSTM(units, return_sequences=True, use_cudnn=use_cudnn)

    device = "GPU" if gpu_visible() else "CPU"
    print(
        f"units {units}, batch {batch}, {args.steps} timed steps, {device}, "
        f"Keras {keras.__version__} on {backend}, policy {args.policy}"
        + (", reference without cuDNN" if args.no_cudnn else "")
    )
    for length in args.xla_lengths if backend == "tensorflow" else []:
        rates = [
            time_training(lstm_layer, batch, length, units, 1, jit, False)
            for jit in (False, True)
        ]
        print(
            f"keras.layers.LSTM length {length}: {rates[0]:,.0f} tokens/s without "
            f"XLA, {rates[1]:,.0f} with jit_compile=True"
        )

    jit = zoo.default_jit_compile()

    def time_lstm():
        return {
            n: time_training(lstm_layer, batch, n, units, args.steps, jit, False)
            for n in args.lengths
        }

    # The reference is timed before and after the cells; the faster of the
    # two counts, so a busy moment cannot flatter the cells.
    lstm_before = time_lstm()
    lstm_flops = flops_per_step(keras.layers.LSTMCell(units), units)
    names = args.cells or zoo.available_cells()
    configurations = [(name, name, {}) for name in names]
    configurations += [
        v for v in VARIANTS if v[1] in names and v[1] in zoo.available_cells()
    ]
    results = []
    for label, name, options in configurations:
        cell_class = zoo.get_cell_class(name)
        takes_ids = getattr(cell_class, "takes_token_ids", False)
        if takes_ids and zoo.cell_takes_vocab_size(cell_class):
            options = {"vocab_size": ID_VOCAB, **options}

        def make_layer(name=name, options=options):
            return zoo.recurrent_layer(name, units, return_sequences=True, **options)

        # The naive form keeps a [batch, units, units] matrix per step for
        # backprop: gigabytes at the long length, so it runs the short one.
        replaced = label in REPLACED
        lengths = args.lengths[:1] if replaced else args.lengths
        with (
            mock.patch.object(*REPLACED[label])
            if replaced
            else contextlib.nullcontext()
        ):
            rates = {
                length: time_training(
                    make_layer, batch, length, units, args.steps, jit, takes_ids
                )
                for length in lengths
            }
        cell_options = {k: v for k, v in options.items() if k != "mode"}
        share = flops_per_step(zoo.get_cell(name, units, **cell_options), units)
        results.append((label, lengths, rates, share / lstm_flops))

    lstm_after = time_lstm()
    header = " ".join(f"{f'tok/s@{n}':>12}" for n in args.lengths)
    lstm_rate = {n: max(lstm_before[n], lstm_after[n]) for n in args.lengths}
    for when, rates in (("before", lstm_before), ("after", lstm_after)):
        row = ", ".join(f"{rates[n]:,.0f} at {n}" for n in args.lengths)
        print(f"keras.layers.LSTM {when} the cells: {row} tokens/s")
    print(
        f"{'cell':<24}{header}{'time/LSTM':>11}{'FLOP share':>11}"
        f"{'long/short':>11}  targets"
    )
    row = " ".join(f"{lstm_rate[n]:>12,.0f}" for n in args.lengths)
    print(
        f"{'keras.layers.LSTM':<24}{row}{1.0:>11.2f}{1.0:>11.2f}"
        f"{lstm_rate[args.lengths[-1]] / lstm_rate[args.lengths[0]]:>11.2f}"
    )
    for label, lengths, rates, share in results:
        ratio = lstm_rate[lengths[-1]] / rates[lengths[-1]]
        scaling = rates[lengths[-1]] / rates[lengths[0]]
        marks = ("ok" if ratio <= 1.1 * share else "SLOW") + " "
        marks += "ok" if scaling >= 0.8 else "SUPERLINEAR"
        if len(lengths) == 1:
            scaling, marks = float("nan"), f"time ratio at length {lengths[0]}"
        row = " ".join(
            f"{rates[n]:>12,.0f}" if n in rates else f"{'-':>12}" for n in args.lengths
        )
        print(f"{label:<24}{row}{ratio:>11.2f}{share:>11.2f}{scaling:>11.2f}  {marks}")


if __name__ == "__main__":
    main()
