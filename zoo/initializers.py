"""Independent initial draws: every weight draws from a seed of its own.

Keras 3 initializers are stateless: an initializer keeps one seed, so every
weight it initializes gets the same stream of draws, and weights that share
an initializer object start as scaled copies of each other. Here a weight's
seed is a stable hash of its layer's seed and its name within the layer
(`stack/push_kernel` for a weight of the part named `stack`), so adding or
removing a weight leaves every other weight's draws as they were:

- the layer's seed is the seed the weight's initializer was given, when it
  was given an integer; else one draw from NumPy's global generator for the
  whole layer, parts included, at its first drawn weight (reproducible
  under `keras.utils.set_random_seed`);
- `IndependentWeights`, mixed into a layer (`ZooCell`, `DifferentiableStack`),
  does it in `add_weight`, and `build_part` extends it to the layers a layer
  is made of, a Keras cell among them;
- `CompositeInitializer` is an initializer made of others (the blocks of a
  fused kernel, a bias with a forget-gate offset): its parts draw from seeds
  derived from the weight's.
"""

import contextlib
import contextvars
import hashlib

import keras
import numpy as np

SEED_RANGE = 2**31 - 1
# Set within `weights_to_be_loaded`: the zoo's layers create their weights as
# zeros, the values about to be overwritten.
_LOADING = contextvars.ContextVar("weights_to_be_loaded", default=False)
# The weights of a Keras layer (`keras.layers.LSTMCell`, `Dense`) and the
# attributes holding their initializers.
KERAS_INITIALIZERS = {
    "kernel": "kernel_initializer",
    "recurrent_kernel": "recurrent_initializer",
    "bias": "bias_initializer",
}


def draw_seed():
    """Returns a seed from NumPy's global generator."""
    return int(np.random.randint(SEED_RANGE))


def derive_seed(seed, name):
    """Returns the seed of `name` under `seed`: a stable hash (SHA-256) of both."""
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % SEED_RANGE


def draws(initializer):
    """Whether `initializer` draws random values (a Keras initializer with a seed)."""
    if isinstance(initializer, CompositeInitializer):
        return any(draws(part) for part in initializer.parts)
    if not isinstance(initializer, keras.initializers.Initializer):
        return False
    return "seed" in initializer.get_config()


def given_seed(initializer):
    """Returns the integer seed `initializer` was given, or None."""
    if isinstance(initializer, CompositeInitializer):
        seeds = [given_seed(part) for part in initializer.parts]
        return next((seed for seed in seeds if seed is not None), None)
    if not draws(initializer):
        return None
    seed = initializer.get_config()["seed"]
    return seed if isinstance(seed, int) else None


def with_seed(initializer, seed):
    """Returns a copy of `initializer` drawing from `seed`.

    An initializer that draws nothing (zeros, a constant, a plain function)
    comes back as it is.
    """
    if isinstance(initializer, CompositeInitializer):
        return initializer.with_seed(seed)
    if not draws(initializer):
        return initializer
    config = initializer.get_config()
    return type(initializer).from_config({**config, "seed": seed})


class CompositeInitializer:
    """An initializer made of other initializers, its `parts`.

    `combine(shape, dtype, parts)` returns the initial value from the parts.
    Seeded with `with_seed` (as `IndependentWeights.add_weight` does), part
    `i` draws from `derive_seed(seed, "part i")`, so parts that are one
    object still draw independently; called unseeded, it seeds itself from
    its parts' given seed or NumPy's global generator.
    """

    def __init__(self, combine, parts, seeded=False):
        self.combine = combine
        self.parts = list(parts)
        self.seeded = seeded

    def with_seed(self, seed):
        parts = [
            with_seed(part, derive_seed(seed, f"part {index}"))
            for index, part in enumerate(self.parts)
        ]
        return CompositeInitializer(self.combine, parts, seeded=True)

    def __call__(self, shape, dtype=None):
        if not self.seeded and draws(self):
            seed = given_seed(self)
            return self.with_seed(draw_seed() if seed is None else seed)(shape, dtype)
        return self.combine(shape, dtype, self.parts)


@contextlib.contextmanager
def weights_to_be_loaded():
    """Within the block, the zoo's layers create their weights as zeros.

    For a model built only to have its weights loaded right after (a
    preset, a run's best model): drawing them costs most of a load (the
    orthogonal recurrent kernels' QR decompositions: 0.3 s of the 512-unit
    `mlstm_ptb_char`'s 0.35 s) and is thrown away. The seeds are still drawn
    from NumPy's global generator as a build outside the block draws them,
    so what runs after a load draws as it would have. Keras's own layers (a
    `keras.layers.LSTMCell` part) draw as always.
    """
    token = _LOADING.set(True)
    try:
        yield
    finally:
        _LOADING.reset(token)


class IndependentWeights:
    """Mixed into a `keras.Layer` (before it): each weight draws from its own seed.

    `add_weight` gives the weight's initializer the seed
    `derive_seed(seed, path)`: `seed` the one the initializer was given,
    else the layer's (`layer_seed`); `path` the weight's name, under the
    names of the layers above it within the outermost `IndependentWeights`
    layer (`stack/read_kernel`). Every drawn weight needs a `name`, unique
    within its layer.
    """

    _layer_seed = None  # drawn by `layer_seed`, or the owner's (`build_part`)
    _weight_scope = ""  # the layers above within the owner (`build_part`)

    def layer_seed(self):
        """The layer's seed: its owner's, else one draw from NumPy's generator."""
        if self._layer_seed is None:
            self._layer_seed = draw_seed()
        return self._layer_seed

    def weight_path(self, name):
        """Returns `name` under the layer's place in its owner (`stack/name`)."""
        return self._weight_scope + name

    def seeded_initializer(self, initializer, name):
        """Returns `initializer` drawing from the seed of the weight `name`."""
        if initializer is None or not draws(initializer):
            return initializer
        seed = given_seed(initializer)
        seed = self.layer_seed() if seed is None else seed
        return with_seed(initializer, derive_seed(seed, self.weight_path(name)))

    def add_weight(self, shape=None, initializer=None, *args, name=None, **kwargs):
        initializer = keras.initializers.get(initializer)
        if draws(initializer) and not name:
            # A bug in the layer, not a user's mistake: the seed needs the name.
            raise ValueError(
                f"{type(self).__name__}.add_weight needs a `name` for a drawn "
                "weight: its seed is derived from it."
            )
        initializer = self.seeded_initializer(initializer, name)
        if _LOADING.get() and initializer is not None:
            initializer = "zeros"  # `weights_to_be_loaded`: the seed is drawn
        return super().add_weight(shape, initializer, *args, name=name, **kwargs)

    def build_part(self, part, input_shape):
        """Builds `part`, a layer this one is made of, drawing from its seeds.

        The part's weights are named under `part.name` (`stack/...`,
        `controller/...`). A part with `IndependentWeights` takes this layer's
        seed; another Keras layer (the `keras.layers.LSTMCell` a DiffStk cell
        holds) gets its `kernel_initializer`, `recurrent_initializer` and
        `bias_initializer` seeded for `kernel`, `recurrent_kernel` and `bias`.
        """
        scope = self.weight_path(f"{part.name}/")
        if isinstance(part, IndependentWeights):
            part._layer_seed = self.layer_seed()
            part._weight_scope = scope
        else:
            for weight, attribute in KERAS_INITIALIZERS.items():
                initializer = getattr(part, attribute, None)
                if draws(initializer):
                    seeded = self.seeded_initializer(
                        initializer, f"{part.name}/{weight}"
                    )
                    setattr(part, attribute, seeded)
        part.build(input_shape)
