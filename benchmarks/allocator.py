r"""One training step of a 33,278-word softmax (WikiText-2's vocabulary) at
batch 64 x 70 tokens, hidden size 64: seconds per step.

Run it twice, with and without TensorFlow's BFC allocator for the CPU:

    TF_NUM_INTRAOP_THREADS=1 python benchmarks/allocator.py
    TF_CPU_ALLOCATOR_USE_BFC=true TF_NUM_INTRAOP_THREADS=1 \
        python benchmarks/allocator.py

(`/usr/bin/time -f "%U user %S sys %R minflt"` in front shows where the time
goes: the default allocator returns each of the step's 600 MB logit-sized
buffers to the kernel and faults them in again at the next step.)
"""

import os
import time

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
tokens, vocabulary = 64 * 70, 33278
x = tf.random.normal([tokens, 64])
y = tf.random.uniform([tokens], 0, vocabulary, tf.int32)
decoder = keras.layers.Dense(vocabulary)
decoder.build((None, 64))


@tf.function
def step():
    with tf.GradientTape() as tape:
        logits = decoder(x)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
    return tape.gradient(loss, decoder.trainable_variables)


step()
start = time.perf_counter()
for _ in range(5):
    step()
allocator = "BFC" if os.environ.get("TF_CPU_ALLOCATOR_USE_BFC") else "default"
print(f"{allocator} allocator: {(time.perf_counter() - start) / 5:.2f} s/step")
