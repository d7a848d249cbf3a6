"""Does deferring an LSTM's recurrent-kernel gradient to after the loop pay?

    PYTHONPATH=. python benchmarks/deferred_gradient.py [--units 256] [--calls 30]
        [--rounds 5]

A bare LSTM loop (TensorFlow `while`, XLA, one thread with `peers.py`'s
settings; batch 32, length 55, input 8; outputs pushed onto tensor lists as
the zoo's loop pushes them) and the gradient of a loss of its outputs,
three ways, and the zoo's own loop as a fourth:
- `full`: TensorFlow's own gradient; its backward loop adds each step's
  `h_{t-1}.T @ dz_t` into the kernel's gradient;
- `deferred`: the kernel's gradient as one product after the loop, as
  PyTorch's fused LSTM computes it: the loop's pre-activations take a zero
  input `e`, whose gradient is each step's `dz_t`, and the kernel's gradient
  is `sum_t h_{t-1}.T @ dz_t` over all steps at once;
- `no_dr`: no kernel gradient at all, the floor either could reach;
- `zoo`: `keras.layers.RNN(keras.layers.LSTMCell(units))` with the zoo's
  loop (`zoo.tensorflow_loop`), the same weights, `training=True`.

Prints the largest difference of each gradient (deferred and zoo against
full, relative to the largest entry) and the best ms a call of each over
`--rounds` rounds of `--calls` calls, the ways taking turns within a round
(benchmarks/log.md, "A second host, JAX held to one core").
"""

import argparse
import os
import time

from peers import ONE_THREAD  # benchmarks/ is the script's folder

LENGTH, BATCH, FEATURES = 55, 32, 8


def lstm_outputs(x, kernel, recurrent, bias, zeros):
    """`(outputs, previous states)`, each `[time, batch, units]`; the
    pre-activations of step t add `zeros[t]`. Both are pushed onto tensor
    lists, as the zoo's loop pushes its outputs (`zoo/tensorflow_loop.py`;
    a `TensorArray`'s gradient copies the whole buffer a step under XLA)."""
    import tensorflow as tf

    units = recurrent.shape[0]
    projected = tf.einsum("tbi,ij->tbj", x, kernel) + bias

    def body(t, h, c, outputs, previous):
        z = projected[t] + tf.matmul(h, recurrent) + zeros[t]
        i, f, g, o = tf.split(z, 4, axis=1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        previous = tf.raw_ops.TensorListPushBack(input_handle=previous, tensor=h)
        h = tf.sigmoid(o) * tf.tanh(c)
        outputs = tf.raw_ops.TensorListPushBack(input_handle=outputs, tensor=h)
        return t + 1, h, c, outputs, previous

    state = tf.zeros([BATCH, units])
    lists = [
        tf.raw_ops.EmptyTensorList(
            element_shape=[BATCH, units],
            max_num_elements=LENGTH,
            element_dtype=tf.float32,
        )
        for _ in range(2)
    ]
    _, _, _, outputs, previous = tf.while_loop(
        lambda t, *_: t < LENGTH,
        body,
        (0, state, state, *lists),
        maximum_iterations=LENGTH,
    )
    return [
        tf.raw_ops.TensorListStack(
            input_handle=handle,
            element_dtype=tf.float32,
            element_shape=[BATCH, units],
            num_elements=LENGTH,
        )
        for handle in (outputs, previous)
    ]


def gradients(x, units):
    """`{name: compiled function of (kernel, recurrent, bias)}` for the three ways."""
    import tensorflow as tf

    def loss_of(outputs):
        return tf.reduce_sum(outputs * outputs)

    @tf.function(jit_compile=True)
    def full(kernel, recurrent, bias):
        zeros = tf.zeros([LENGTH, BATCH, 4 * units])
        with tf.GradientTape() as tape:
            tape.watch([kernel, recurrent, bias])
            loss = loss_of(lstm_outputs(x, kernel, recurrent, bias, zeros)[0])
        return tape.gradient(loss, [kernel, recurrent, bias])

    @tf.function(jit_compile=True)
    def deferred(kernel, recurrent, bias):
        zeros = tf.zeros([LENGTH, BATCH, 4 * units])
        with tf.GradientTape() as tape:
            tape.watch([kernel, bias, zeros])
            fixed = tf.stop_gradient(recurrent)
            outputs, previous = lstm_outputs(x, kernel, fixed, bias, zeros)
            loss = loss_of(outputs)
        d_kernel, d_bias, d_z = tape.gradient(loss, [kernel, bias, zeros])
        return [d_kernel, tf.einsum("tbu,tbv->uv", previous, d_z), d_bias]

    @tf.function(jit_compile=True)
    def no_dr(kernel, recurrent, bias):
        zeros = tf.zeros([LENGTH, BATCH, 4 * units])
        with tf.GradientTape() as tape:
            tape.watch([kernel, bias])
            fixed = tf.stop_gradient(recurrent)
            loss = loss_of(lstm_outputs(x, kernel, fixed, bias, zeros)[0])
        d_kernel, d_bias = tape.gradient(loss, [kernel, bias])
        return [d_kernel, tf.zeros_like(recurrent), d_bias]

    import keras

    from zoo.tensorflow_loop import tensorflow_loop

    layer = tensorflow_loop(
        keras.layers.RNN(keras.layers.LSTMCell(units), return_sequences=True)
    )
    batch_major = tf.transpose(x, [1, 0, 2])
    layer(batch_major)

    @tf.function(jit_compile=True)
    def zoo(kernel, recurrent, bias):
        for weight, value in zip(
            layer.cell.trainable_weights, (kernel, recurrent, bias), strict=True
        ):
            weight.assign(value)
        with tf.GradientTape() as tape:
            loss = loss_of(layer(batch_major, training=True))
        return tape.gradient(loss, layer.cell.trainable_weights)

    return {"full": full, "deferred": deferred, "no_dr": no_dr, "zoo": zoo}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.environ.update(ONE_THREAD)  # before TensorFlow starts
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    draw = tf.random.Generator.from_seed(0)
    x = draw.normal([LENGTH, BATCH, FEATURES])
    weights = (
        draw.normal([FEATURES, 4 * args.units]) * 0.1,
        draw.normal([args.units, 4 * args.units]) * 0.05,
        tf.zeros([4 * args.units]),
    )
    ways = gradients(x, args.units)
    full = ways["full"](*weights)
    for way in ("deferred", "zoo"):
        other = ways[way](*weights)
        for name, a, b in zip(
            ("kernel", "recurrent", "bias"), full, other, strict=True
        ):
            difference = float(tf.reduce_max(tf.abs(a - b)) / tf.reduce_max(tf.abs(a)))
            print(f"{way} {name}: largest difference {difference:.2e}")
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(args.rounds):
        for name, way in ways.items():
            way(*weights)
            started = time.perf_counter()
            for _ in range(args.calls):
                result = way(*weights)
            result[0].numpy()
            elapsed = (time.perf_counter() - started) / args.calls
            best[name] = min(best[name], elapsed)
    for name, seconds in best.items():
        print(f"{name}: {seconds * 1000:.2f} ms a call at best, {args.units} units")


if __name__ == "__main__":
    main()
