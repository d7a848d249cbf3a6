"""Whether TensorFlow's XLA runs a small LSTM step faster without `dot`s.

JAX's XLA runs the small products of a recurrent loop as YNNPACK fusions;
TensorFlow 2.21's emits plain `dot`s (benchmarks/log.md, "What is left
at 8-32 units"). This times one compiled training step of a bare LSTM loop
(batch 32, length 55, 8 inputs, fused gates, forward and backward) with its
products written either as `tf.matmul` or as a broadcast multiply and sum,
which XLA fuses into a loop instead of a `dot`. CPU ms per step, one thread,
best of 5 rounds of 200 steps:

    python benchmarks/small_dots.py --units 8 32
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

BATCH, LENGTH, INPUTS = 32, 55, 8


def product(mode):
    if mode == "matmul":
        return tf.matmul
    return lambda a, w: tf.reduce_sum(a[:, :, None] * w[None, :, :], axis=1)


def training_step(units, mode):
    dot = product(mode)
    x = tf.random.normal([LENGTH, BATCH, INPUTS], seed=0)
    kernel = tf.Variable(tf.random.normal([INPUTS, 4 * units], seed=1) * 0.1)
    recurrent = tf.Variable(tf.random.normal([units, 4 * units], seed=2) * 0.1)

    @tf.function(jit_compile=True)
    def step():
        with tf.GradientTape() as tape:
            w, r = tf.identity(kernel), tf.identity(recurrent)
            tape.watch([w, r])

            def body(t, h, c, loss):
                i, f, g, o = tf.split(dot(x[t], w) + dot(h, r), 4, axis=1)
                c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
                h = tf.sigmoid(o) * tf.tanh(c)
                return t + 1, h, c, loss + tf.reduce_sum(h * h)

            zeros = tf.zeros([BATCH, units])
            *_, loss = tf.while_loop(
                lambda t, *_: t < LENGTH,
                body,
                [0, zeros, zeros, 0.0],
                maximum_iterations=LENGTH,
            )
        grad_w, grad_r = tape.gradient(loss, [w, r])
        kernel.assign_sub(1e-4 * grad_w)
        recurrent.assign_sub(1e-4 * grad_r)
        return loss

    return step


def cpu_ms_per_step(step, rounds=5, steps=200):
    step()
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(steps):
            step()
        best = min(best, (time.process_time() - start) / steps * 1e3)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, nargs="+", default=[8, 32])
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    for units in args.units:
        times = {m: cpu_ms_per_step(training_step(units, m)) for m in ("matmul", "sum")}
        print(
            f"{units} units: matmul {times['matmul']:.3f} ms, "
            f"multiply-and-sum {times['sum']:.3f} ms CPU per step"
        )


if __name__ == "__main__":
    main()
