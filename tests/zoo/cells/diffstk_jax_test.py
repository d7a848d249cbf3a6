import keras
import numpy as np

import zoo
from tests.zoo.cells.reference import random_inputs


def test_a_diffstk_layer_is_the_zoos_rnn_on_every_backend():
    # zoo.RNN, a keras.layers.RNN (files from before it are brought up by
    # python -m training.migrate). Its JAX loop (state noise) is tested in
    # tests/training/core/backends_test.py.
    layer = zoo.recurrent_layer("diffstk_rnn", 4, noise_stddev=0.1)
    assert type(layer) is zoo.RNN
    assert isinstance(layer, keras.layers.RNN)
    x = random_inputs()
    first, second = (np.asarray(layer(x, training=True)) for _ in range(2))
    assert not np.allclose(first, second)
