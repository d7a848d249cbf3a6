"""Training throughput of zoo cells next to Keras's LSTM and PyTorch's.

    PYTHONPATH=. python benchmarks/peers.py [--units 256] [--batch 32]
        [--input 64] [--lengths 128 512] [--steps 3] [--rounds 2]
        [--precisions float32 bfloat16] [--check]

PyTorch is not a dependency of the project; the PyTorch rows run when it is
installed (`pip install torch`; the recorded run used torch 2.13.0, CPU
build) and are skipped otherwise.

Rows, each trained with Adam on the mean square of the layer's outputs (one
recurrent layer, `--input` features in, `--units` out, every step's output):
- `keras.layers.LSTM`, and the zoo cells `lstm` (Keras's `LSTMCell`),
  `mlstm` and `mmlstm` (k = 4) in `keras.layers.RNN`;
- PyTorch's `nn.LSTM` (its fused kernel);
- the same three cells written as a PyTorch user writes a custom cell: the
  input-side products for all steps hoisted into one product before a Python
  loop over time. Their weights are copied from the zoo cells, and `--check`
  first shows that their outputs equal the zoo cells' (float32).

bfloat16 is `keras.mixed_precision` policy `mixed_bfloat16` for Keras and
`torch.autocast("cpu", torch.bfloat16)` for PyTorch: float32 weights,
bfloat16 products. PyTorch's `nn.LSTM` fails under that autocast on this CPU
(torch 2.13: "could not create a primitive descriptor for the LSTM forward
propagation primitive"), so its bfloat16 row is the module cast to
bfloat16, weights included. Every model is built and run once first; then, in each of
`--rounds` rounds, every model in turn trains `--steps` steps, so load on a
shared machine falls on all rows alike. Printed: the median tokens/s of each
row at each length and precision, and the ratios of the issue's goals.
"""

import argparse
import time

import keras
import numpy as np
import tensorflow as tf

import zoo

try:
    import torch
except ImportError:  # the PyTorch rows are optional
    torch = None

CHOICES = 4  # mmlstm's k
ZOO_CELLS = {
    "lstm": {},
    "mlstm": {},
    "mmlstm": {"num_choices": CHOICES},
}
POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}


def keras_model(make_layer, batch, length, features, precision):
    """A compiled one-layer model built under `precision`'s policy."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(POLICIES[precision])
    try:
        keras.utils.set_random_seed(0)
        inputs = keras.Input(batch_shape=(batch, length, features))
        model = keras.Model(inputs, make_layer()(inputs))
        model.compile(
            optimizer="adam", loss="mse", jit_compile=zoo.default_jit_compile()
        )
    finally:
        keras.mixed_precision.set_global_policy(previous)
    return model


def keras_step(model, x):
    y = np.zeros(model.output_shape, "float32")
    return lambda: model.train_on_batch(x, y)


def zoo_layer(name, units, **options):
    return keras.layers.RNN(
        zoo.get_cell(name, units, **ZOO_CELLS[name], **options),
        return_sequences=True,
    )


def weights_of(layer):
    """The cell's weights by name, as float32 NumPy arrays."""
    return {
        w.path.split("/")[-1]: np.asarray(w.numpy(), "float32")
        for w in layer.cell.weights
    }


if torch is not None:

    class TorchLoop(torch.nn.Module):
        """A cell as a PyTorch user writes one: inputs hoisted, a Python loop.

        `weights` are the zoo cell's, in Keras's layout (`x @ kernel`); the
        subclasses compute the zoo cell's equations with them.
        """

        def __init__(self, weights):
            super().__init__()
            self.weights = torch.nn.ParameterDict(
                {k: torch.nn.Parameter(torch.from_numpy(v)) for k, v in weights.items()}
            )

        def forward(self, x):  # x [batch, time, features]
            w = self.weights
            x_proj = x @ w["kernel"]  # every step's input products at once
            batch, units = x.shape[0], w["recurrent_kernel"].shape[0]
            state = self.initial_state(batch, units, x_proj.dtype)
            outputs = []
            for t in range(x.shape[1]):
                h, state = self.step(x_proj[:, t], state)
                outputs.append(h)
            return torch.stack(outputs, dim=1)  # [batch, time, units]

        @staticmethod
        def lstm_update(z, c_prev):
            i, f, candidate, o = z.chunk(4, dim=-1)  # Keras's gate order
            c = torch.sigmoid(f) * c_prev + torch.sigmoid(i) * torch.tanh(candidate)
            return torch.sigmoid(o) * torch.tanh(c), c

    class TorchLSTM(TorchLoop):
        def initial_state(self, batch, units, dtype):
            return (torch.zeros(batch, units, dtype=dtype),) * 2

        def step(self, x_proj, state):
            h, c = state
            w = self.weights
            z = x_proj + h @ w["recurrent_kernel"] + w["bias"]
            h, c = self.lstm_update(z, c)
            return h, (h, c)

    class TorchMLSTM(TorchLSTM):
        def step(self, x_proj, state):
            h, c = state
            w = self.weights
            units = h.shape[-1]
            m = x_proj[:, :units] * (h @ w["multiplicative_kernel"])
            z = x_proj[:, units:] + m @ w["recurrent_kernel"] + w["bias"]
            h, c = self.lstm_update(z, c)
            return h, (h, c)

    class TorchMMLSTM(TorchLSTM):
        def __init__(self, weights):
            # mmlstm's recurrent weights are its choice matrices.
            weights = {**weights, "recurrent_kernel": weights["choice_kernels"]}
            del weights["choice_kernels"]
            super().__init__(weights)

        def initial_state(self, batch, units, dtype):
            h, c = super().initial_state(batch, units, dtype)
            return h, c, torch.full((batch, 4, CHOICES), 1.0 / CHOICES, dtype=dtype)

        def step(self, x_proj, state):
            h, c, keys = state
            w = self.weights
            batch, units = h.shape
            x_h, x_key = x_proj[:, : 4 * units], x_proj[:, 4 * units :]
            logits = x_key + h @ w["key_recurrent_kernel"]
            logits = logits.reshape(batch, 4, CHOICES)
            logits = logits + torch.einsum("bgi,gij->bgj", keys, w["key_kernel"])
            keys = torch.softmax(logits, dim=-1)  # [batch, 4, k]
            products = (h @ w["recurrent_kernel"]).reshape(batch, 4, CHOICES, units)
            mixed = (keys[..., None] * products).sum(dim=2).reshape(batch, 4 * units)
            h, c = self.lstm_update(x_h + mixed + w["bias"], c)
            return h, (h, c, keys)

    TORCH_LOOPS = {"lstm": TorchLSTM, "mlstm": TorchMLSTM, "mmlstm": TorchMMLSTM}

    class TorchFused(torch.nn.Module):
        def __init__(self, features, units, precision):
            super().__init__()
            self.lstm = torch.nn.LSTM(features, units, batch_first=True)
            self.lstm.to(getattr(torch, precision))

        def forward(self, x):
            return self.lstm(x.to(self.lstm.weight_ih_l0.dtype))[0]

    def torch_step(module, x, precision):
        optimizer = torch.optim.Adam(module.parameters())
        x = torch.from_numpy(x)
        autocast = precision != "float32" and not isinstance(module, TorchFused)

        def step():
            optimizer.zero_grad()
            with torch.autocast("cpu", torch.bfloat16, enabled=autocast):
                outputs = module(x)
            loss = outputs.float().square().mean()
            loss.backward()
            optimizer.step()

        return step


def check_equations(batch, length, features, units):
    """Prints the largest difference of each PyTorch loop from its zoo cell."""
    x = np.random.default_rng(1).normal(size=(batch, length, features))
    x = x.astype("float32")
    for name, loop in TORCH_LOOPS.items():
        keras.utils.set_random_seed(0)
        # Random biases, so that a misplaced bias shows.
        layer = zoo_layer(name, units, bias_initializer="random_normal")
        expected = np.asarray(layer(x))
        with torch.no_grad():
            actual = loop(weights_of(layer))(torch.from_numpy(x)).numpy()
        difference = float(np.max(np.abs(actual - expected)))
        print(
            f"check {name}: PyTorch loop vs zoo cell, max |difference| {difference:.1e}"
        )
        if difference > 1e-5:
            raise SystemExit(f"the PyTorch {name} loop does not match the zoo cell")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--input", type=int, default=64)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--precisions", nargs="+", choices=list(POLICIES), default=list(POLICIES)
    )
    parser.add_argument(
        "--check", action="store_true", help="check the PyTorch loops' equations"
    )
    args = parser.parse_args()
    tf.get_logger().setLevel("ERROR")
    units, batch, features = args.units, args.batch, args.input
    if torch is None:
        print("PyTorch not installed (pip install torch): its rows are skipped")
    elif args.check:
        check_equations(3, 7, 5, 6)

    rows = ["keras.layers.LSTM", *(f"zoo {name}" for name in ZOO_CELLS)]
    if torch is not None:
        rows += ["torch nn.LSTM", *(f"torch loop {name}" for name in ZOO_CELLS)]
    steps = {}  # (row, length, precision) -> one training step
    for length in args.lengths:
        x = np.random.default_rng(0).normal(size=(batch, length, features))
        x = x.astype("float32")
        for precision in args.precisions:

            def add(row, make_layer, length=length, precision=precision, x=x):
                model = keras_model(make_layer, batch, length, features, precision)
                steps[row, length, precision] = keras_step(model, x)
                return model

            add(
                "keras.layers.LSTM",
                lambda: keras.layers.LSTM(units, return_sequences=True),
            )
            for name in ZOO_CELLS:
                model = add(f"zoo {name}", lambda name=name: zoo_layer(name, units))
                if torch is not None:
                    torch.manual_seed(0)
                    loop = TORCH_LOOPS[name](weights_of(model.layers[-1]))
                    steps[f"torch loop {name}", length, precision] = torch_step(
                        loop, x, precision
                    )
            if torch is not None:
                torch.manual_seed(0)
                fused = TorchFused(features, units, precision)
                steps["torch nn.LSTM", length, precision] = torch_step(
                    fused, x, precision
                )
    for step in steps.values():
        step()  # traces, compiles, allocates
    seconds = {key: [] for key in steps}
    for _ in range(args.rounds):
        for key, step in steps.items():
            for _ in range(args.steps):
                start = time.perf_counter()
                step()
                seconds[key].append(time.perf_counter() - start)
    rate = {
        (row, n, p): batch * n / float(np.median(seconds[row, n, p]))
        for (row, n, p) in seconds
    }

    columns = [(n, p) for n in args.lengths for p in args.precisions]
    print(
        f"units {units}, batch {batch}, input {features}, Adam; "
        f"{args.rounds} rounds of {args.steps} steps, median tokens/s"
    )
    print(f"{'model':<22}" + "".join(f"{f'{p}@{n}':>16}" for n, p in columns))
    for row in rows:
        print(f"{row:<22}" + "".join(f"{rate[row, n, p]:>16,.0f}" for n, p in columns))
    if torch is None:
        return
    for n, p in columns:
        fused = rate["torch nn.LSTM", n, "float32"]
        goal = ", ".join(
            f"{name} {rate[f'zoo {name}', n, p] / fused:.2f}x" for name in ZOO_CELLS
        )
        print(f"length {n}, zoo {p} over torch nn.LSTM float32: {goal}")
        loops = ", ".join(
            f"{name} {rate[f'zoo {name}', n, p] / rate[f'torch loop {name}', n, p]:.1f}x"  # noqa: E501
            for name in ZOO_CELLS
        )
        print(f"length {n}, {p}, zoo over the PyTorch loop: {loops}")


if __name__ == "__main__":
    main()
