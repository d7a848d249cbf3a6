import keras
import numpy as np

import zoo
from tests.zoo.cells.reference import random_inputs


def test_a_diffstk_layer_stays_a_keras_rnn_on_every_backend():
    # Keras names saved layers by class: another class would make every
    # earlier run's .keras file unreadable. Its JAX loop (state noise) is
    # tested in tests/training/core/backends_test.py.
    layer = zoo.recurrent_layer("diffstk_rnn", 4, noise_stddev=0.1)
    assert type(layer) is keras.layers.RNN
    x = random_inputs()
    first, second = (np.asarray(layer(x, training=True)) for _ in range(2))
    assert not np.allclose(first, second)
