"""How fast can batch-64 generation from the 512-unit mLSTM preset go on this CPU?

    PYTHONPATH=. python benchmarks/generation_bound.py [--steps 1000] [--rounds 3]

Issue 59 asks the compiled sampler for 100,000 tokens a second at batch 64.
For the `mlstm_ptb_char` preset (512 units) one step of the batch multiplies
`(64, 512)` by `W_mh` `(512, 512)` and `m_t` by the gates' `(512, 2048)`:
168 MFLOP, so 100,000 tokens a second (1,563 steps) needs 262 GFLOP/s of
products alone. This script measures what the step can do at its lightest,
written by hand in TensorFlow rather than through the zoo's cells: the
input projections of all 51 tokens precomputed (a table lookup instead of
a product), no top-k, the draw as the arg-max of the logits plus Gumbel
noise, random weights of the preset's shapes. Rows:

- `products`: the two recurrent products alone, 1,000 times;
- `step`: the whole step in a `tf.while_loop` (sampling and the state
  carried), each one process on one thread;
- `step, two processes`: `step` with batch 32 in two processes at once, one on
  each core (`os.sched_setaffinity`), their tokens added: all the machine;
- `zoo sampler`, `zoo sampler, two processes`: the program of
  `zoo.generate` for the preset itself (`zoo.sampler.Sampler.program`),
  in float32 under XLA as `zoo.generate` runs it, and as a graph without
  XLA with the preset loaded under `keras.config.set_dtype_policy(
  "bfloat16")` (every weight and all its arithmetic in bfloat16).

Each row runs in float32 under XLA (the compiled sampler's program) and
with the products in bfloat16 through oneDNN in a graph without XLA (the
one way found to use this CPU's AMX units from TensorFlow; XLA's own dot
is no faster in bfloat16, and neither is JAX's). Best of `--rounds`, after
one untimed run; benchmarks/log.md has a run.
"""

import argparse
import json
import os
import subprocess
import sys
import time

UNITS, VOCAB = 512, 51
PRECISIONS = ("float32", "bfloat16")
ROWS = {"products": "products", "step": "step", "sampler": "zoo sampler"}


def timed_loop(kind, precision, batch, steps):
    """Seconds for `steps` steps of `kind` at `precision`, best of three."""
    import numpy as np
    import tensorflow as tf

    products = tf.bfloat16 if precision == "bfloat16" else tf.float32
    draw = np.random.default_rng(0)

    def weights(*shape, scale=0.05, dtype=tf.float32):
        return tf.constant(draw.normal(0, scale, shape).astype("float32"), dtype)

    table = weights(VOCAB, 5 * UNITS, scale=0.1)  # [W_mx | W_x] of each token
    w_mh = weights(UNITS, UNITS, dtype=products)
    w_m = weights(UNITS, 4 * UNITS, dtype=products)
    bias, decoder = weights(4 * UNITS, scale=0.0), weights(UNITS, VOCAB)

    def product(x, w):
        return tf.cast(tf.matmul(tf.cast(x, products), w), tf.float32)

    def step(t, token, h, c, tokens):
        if kind == "products":
            return t + 1, token, product(product(h, w_mh), w_m)[:, :UNITS], c, tokens
        x = tf.gather(table, token)
        m = x[:, :UNITS] * product(h, w_mh)
        i, f, g, o = tf.split(x[:, UNITS:] + product(m, w_m) + bias, 4, axis=1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        h = tf.sigmoid(o) * tf.tanh(c)
        key = tf.stack([0, t])
        u = tf.random.stateless_uniform((batch, VOCAB), key, minval=1e-20, maxval=1.0)
        logits = tf.matmul(h, decoder) - tf.math.log(-tf.math.log(u))
        token = tf.cast(tf.argmax(logits, axis=-1), tf.int32)
        tokens = tf.tensor_scatter_nd_update(tokens, [[t]], token[None])
        return t + 1, token, h, c, tokens

    @tf.function(jit_compile=precision == "float32", autograph=False)
    def run():
        zeros = tf.zeros((batch, UNITS))
        start = (
            0,
            tf.zeros(batch, tf.int32),
            zeros,
            zeros,
            tf.zeros((steps, batch), tf.int32),
        )
        _, _, h, _, tokens = tf.while_loop(lambda t, *_: t < steps, step, start)
        return tokens, h  # h too, so that no product is left out as unused

    def finished():
        for tensor in run():
            tensor.numpy()

    return best_of_three(finished)


def best_of_three(run):
    """The least of three timed calls of `run`, after an untimed one (the
    compilation)."""
    run()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def timed_sampler(precision, batch, steps):
    """Seconds for `steps` tokens of `zoo.generate`'s program for the preset."""
    import keras
    import numpy as np
    import tensorflow as tf

    import zoo
    from zoo.sampler import Sampler

    keras.config.set_dtype_policy(precision)
    sampler = Sampler(zoo.LanguageModel.from_preset("mlstm_ptb_char"))
    program = tf.function(
        sampler.program, jit_compile=precision == "float32", autograph=False
    )
    options = sampler.options(seed=0)
    arguments = (np.ones((batch, 1), "int32"), np.ones(batch, "int32"), steps)
    return best_of_three(lambda: program(*arguments, options)[0].numpy())


def worker(kind, precision, batch, steps, core):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    if core is not None:
        os.sched_setaffinity(0, {core})
    if kind == "sampler":
        print(json.dumps(timed_sampler(precision, batch, steps)))
    else:
        print(json.dumps(timed_loop(kind, precision, batch, steps)))


def start(kind, precision, batch, steps, core=None):
    environment = {
        **os.environ,
        "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false",
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    command = [sys.executable, __file__, "--worker", kind, precision, str(batch)]
    command += [str(steps), "none" if core is None else str(core)]
    return subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, text=True)


def seconds(process):
    out, _ = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"a worker failed with exit status {process.returncode}")
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, precision, batch, steps, core = args.worker
        core = None if core == "none" else int(core)
        return worker(kind, precision, int(batch), int(steps), core)
    flop = 2 * 64 * (UNITS * UNITS + UNITS * 4 * UNITS)
    best = {}
    for _ in range(args.rounds):
        for precision in PRECISIONS:
            for kind in ("products", "step", "sampler"):
                taken = seconds(start(kind, precision, 64, args.steps))
                key = (ROWS[kind], precision)
                best[key] = min(best.get(key, taken), taken)
            for kind in ("step", "sampler"):
                pair = [start(kind, precision, 32, args.steps, core) for core in (0, 1)]
                rate = sum(32 * args.steps / seconds(p) for p in pair)
                key = (ROWS[kind] + ", two processes", precision)
                best[key] = min(best.get(key, float("inf")), 64 * args.steps / rate)
    print(f"mLSTM {UNITS} units, batch 64, {args.steps} steps, best of {args.rounds}")
    print("| row | precision | tokens/s | per step (µs) | GFLOP/s of products |")
    print("|---|---|---|---|---|")
    for (kind, precision), taken in best.items():
        step = taken / args.steps
        print(
            f"| {kind} | {precision} | {64 / step:,.0f} | {step * 1e6:,.0f} "
            f"| {flop / step / 1e9:,.0f} |"
        )


if __name__ == "__main__":
    main()
