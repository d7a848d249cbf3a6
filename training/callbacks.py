"""Training callbacks: state resets, temperature annealing, per-epoch metrics,
exact resumption."""

import json
import os
from pathlib import Path

import h5py
import keras
import numpy as np

import zoo
from zoo.cells.second_order import second_order_cells
from zoo.checks import check_number, check_positive_int
from zoo.walk import walk_layers


class ResetStatesEachEpoch(keras.callbacks.Callback):
    """Zeroes the recurrent state before each epoch and around each evaluation.

    For stateful models trained with truncated BPTT (`zoo.reset_states`).
    With `every`, the training state is also zeroed before every `every`-th
    batch of an epoch (batches `every`, `2 every`, ...): the model then learns
    to predict from a fresh state, as evaluation starts, and cannot come to
    rely on a state carried over a whole epoch (`train.reset_every`).
    """

    def __init__(self, every=None):
        super().__init__()
        if every is not None:
            check_positive_int("every", every)
        self.every = every

    def on_epoch_begin(self, epoch, logs=None):
        self._reset()

    def on_train_batch_begin(self, batch, logs=None):
        if self.every is not None and batch > 0 and batch % self.every == 0:
            self._reset()

    def on_test_begin(self, logs=None):
        self._reset()

    def on_test_end(self, logs=None):
        self._reset()

    def _reset(self):
        # On JAX, `fit` keeps the state outside the variables between steps
        # (`zoo.carry_state_on_jax`): write it back first, which also makes
        # the next step read the variables again, reset here.
        sync = getattr(self.model, "jax_state_sync", None)
        if sync is not None:
            sync()
        zoo.reset_states(self.model)


class TemperatureAnnealing(keras.callbacks.Callback):
    """Anneals `tau` of every second-order cell at the end of each epoch.

    `tau <- max(tau * factor, minimum)` for each `SecondOrderLSTMCell` in the
    model, including cells inside `Bidirectional` and `StackedRNNCells` (the
    second-order LSTM report starts at `tau = 1` and multiplies by 0.9 per
    epoch). The first epoch runs at the cells' initial temperature. The new
    temperature (of the first cell) is logged as `temperature`.

    Args:
        factor: Number in (0, 1], the per-epoch multiplier. Default: 0.9.
        minimum: Positive number, the lowest temperature. Default: 0.1 (the
            report's "effectively one-hot").

    Example:

    >>> model.fit(x, y, epochs=20, callbacks=[TemperatureAnnealing(0.9, 0.1)])
    """

    def __init__(self, factor=0.9, minimum=0.1):
        check_number("factor", factor, low=0, high=1, low_open=True)
        check_number("minimum", minimum, low=0, low_open=True)
        super().__init__()
        self.factor = factor
        self.minimum = minimum

    def on_epoch_end(self, epoch, logs=None):
        temperatures = []
        for cell in second_order_cells(self.model):
            tau = float(keras.ops.convert_to_numpy(cell.temperature))
            tau = max(tau * self.factor, self.minimum)
            cell.temperature.assign(tau)
            temperatures.append(tau)
        if logs is not None and temperatures:
            logs["temperature"] = temperatures[0]


class StopBelowLoss(keras.callbacks.Callback):
    """Stops training once the monitored loss falls below a threshold.

    The multi-matrix report trains the Dyck-RNN "until the dev loss goes
    below 1e-5" (section 5.3); `train.stop_below_loss` sets it.

    Args:
        threshold: Positive number.
        monitor: The logged value to watch. Default: `"val_loss"`.
    """

    def __init__(self, threshold, monitor="val_loss"):
        check_number("threshold", threshold, low=0, low_open=True)
        super().__init__()
        self.threshold = threshold
        self.monitor = monitor

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is not None and value < self.threshold:
            self.model.stop_training = True


class EpochMetrics(keras.callbacks.Callback):
    """Adds numbers measured on the model at each epoch's end to the epoch's logs.

    `make_measure(model)` is called once, when training begins, and returns
    `measure()`, a function of nothing that returns `{name: number}`; each
    number is logged as `prefix + name`. `training.fitting.fit` runs these
    callbacks first, so `CSVLogger` (a run's `log.csv`), the `History` and
    every other callback see them (`DyckTask` logs `val_wcpa` so).

    Args:
        make_measure: `model -> measure`, as above.
        prefix: Put before each name. Default: `"val_"`.
    """

    def __init__(self, make_measure, prefix="val_"):
        super().__init__()
        self.make_measure = make_measure
        self.prefix = prefix
        self.measure = None

    def on_train_begin(self, logs=None):
        self.measure = self.make_measure(self.model)

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        for name, value in self.measure().items():
            logs[self.prefix + name] = value


def write_atomically(path, text):
    """Writes `text` to `path` through a temporary file and `os.replace`.

    A reader never sees half a file; the temporary file is this process's
    own, so processes writing the same path never write into each other's.
    """
    path = Path(path)
    partial = path.with_name(f"{path.name}.partial-{os.getpid()}")
    partial.write_text(text)
    os.replace(partial, path)


class AtomicModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """A `ModelCheckpoint` that never leaves a half-written file at `filepath`.

    The model is saved beside it (`NAME.partial.keras`) and moved into place
    with `os.replace`, so a run killed while saving keeps its last best model.
    """

    def __init__(self, filepath, **kwargs):
        self.final_path = Path(filepath)
        partial = self.final_path.with_name(f"{self.final_path.stem}.partial.keras")
        super().__init__(str(partial), **kwargs)

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if Path(self.filepath).exists():
            os.replace(self.filepath, self.final_path)


# The attributes that hold a callback's progress between epochs, which
# `BackupAndRestore` does not keep (see `RunBackup`).
CALLBACK_STATE = {
    keras.callbacks.ModelCheckpoint: ("best",),
    keras.callbacks.EarlyStopping: ("wait", "best", "best_epoch", "stopped_epoch"),
    keras.callbacks.ReduceLROnPlateau: ("wait", "best", "cooldown_counter"),
}


def _state_of(callback):
    for kind, names in CALLBACK_STATE.items():
        if isinstance(callback, kind):
            return {
                name: None
                if getattr(callback, name) is None
                else float(getattr(callback, name))
                for name in names
            }
    return None


def seed_generators(model):
    """Every `keras.random.SeedGenerator` of `model`'s layers, each once, in a
    fixed order (the layers' as `zoo.walk.walk_layers` yields them).

    What a training step draws its random numbers from: the masks of
    `Dropout` layers and of dropout inside Keras's recurrent cells, the
    DiffStk cells' state noise, a sampled softmax's classes. Keras lists a
    generator's state among `model.variables` but not `model.weights`, so
    neither weight files nor `BackupAndRestore` keep it. (Keras's global
    generator, for random ops given no seed, is left out: no layer here
    draws from it.)
    """
    found = {}
    for layer in walk_layers(model, include_self=True):
        for generator in layer._seed_generators:
            # On JAX, recurrent state is listed there too (`zoo.carry_state_on_jax`).
            if isinstance(generator, keras.random.SeedGenerator):
                found.setdefault(id(generator), generator)
    return list(found.values())


class RunBackup(keras.callbacks.BackupAndRestore):
    """`BackupAndRestore` that resumes exactly where an uninterrupted run would be.

    Keras's backup keeps the weights, optimizer and epoch; this one also keeps
    the state of the other callbacks (`ModelCheckpoint`'s best value,
    `EarlyStopping`'s and `ReduceLROnPlateau`'s counters, `CALLBACK_STATE`),
    the state of every seed generator of the model (`seed_generators`: the
    resumed run draws the dropout masks and noise the uninterrupted one
    would) and the size `log_path` had, and commits them atomically at each
    epoch end: the weights go to `epoch-N.weights.h5`, then
    `training_metadata.json` naming them is replaced in one `os.replace`, so
    a kill at any point leaves the last whole epoch's backup. It must run
    after the callbacks it tracks (`training.fitting.fit` puts it last).
    A backup that cannot be read is a one-line `ValueError`; one written
    before seed generators were kept resumes with the generators as built.

    Args:
        backup_dir: The folder of the backup (deleted when training ends).
        log_path: The `CSVLogger` file whose size is recorded, or `None`.
        facts: A JSON-serializable dict saved with every backup (e.g. the
            run's compile mode, which a resumed run keeps); `read_metadata`
            returns it under `"facts"`.
    """

    def __init__(self, backup_dir, log_path=None, facts=None):
        super().__init__(str(backup_dir))
        self.log_path = None if log_path is None else Path(log_path)
        self.facts = dict(facts or {})
        self.tracked = []

    def track(self, callbacks):
        """Sets the callbacks whose state is saved and restored."""
        kinds = tuple(CALLBACK_STATE)
        self.tracked = [c for c in callbacks if isinstance(c, kinds)]

    @staticmethod
    def read_metadata(backup_dir):
        """The committed metadata of a backup folder, or `None` if it has none."""
        path = Path(backup_dir) / "training_metadata.json"
        if not path.exists():
            return None
        try:
            metadata = json.loads(path.read_text())
            int(metadata["epoch"]), str(metadata["weights"])
        except (ValueError, KeyError, TypeError):
            raise ValueError(
                f"Backup {str(path)!r} is not a backup written by this version; "
                f"expected its JSON (delete {str(backup_dir)!r} to start afresh)."
            ) from None
        weights = Path(backup_dir) / metadata["weights"]
        if not h5py.is_hdf5(weights):
            raise ValueError(
                f"Backup weights {str(weights)!r} cannot be read (not an HDF5 "
                f"file); expected the backup's weights (delete {str(backup_dir)!r} "
                "to start afresh)."
            )
        return metadata

    def _save_model(self):
        folder = Path(self.backup_dir)
        folder.mkdir(parents=True, exist_ok=True)
        weights = folder / f"epoch-{self._current_epoch}.weights.h5"
        partial = folder / "partial.weights.h5"
        self.model.save_weights(str(partial), overwrite=True)
        os.replace(partial, weights)
        log_size = None
        if self.log_path is not None and self.log_path.exists():
            log_size = self.log_path.stat().st_size
        metadata = {
            "epoch": self._current_epoch,
            "batch": self._last_batch_seen,
            "weights": weights.name,
            "callbacks": [_state_of(callback) for callback in self.tracked],
            "seed_generators": [
                keras.ops.convert_to_numpy(generator.state).tolist()
                for generator in seed_generators(self.model)
            ],
            "log_size": log_size,
            "facts": self.facts,
        }
        write_atomically(self._training_metadata_path, json.dumps(metadata))
        for old in folder.glob("epoch-*.weights.h5"):
            if old != weights:
                old.unlink()

    def _load_model(self):
        metadata = self.read_metadata(self.backup_dir)
        if metadata is None:
            return
        weights = Path(self.backup_dir) / metadata["weights"]
        optimizer = self.model.optimizer
        if optimizer is not None and not optimizer.built:
            optimizer.build(self.model.trainable_variables)
        try:
            self.model.load_weights(str(weights))
        except (OSError, ValueError) as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ValueError(
                f"Backup weights {str(weights)!r} cannot be read ({reason}); "
                f"expected an HDF5 file (delete {self.backup_dir!r} to start afresh)."
            ) from None
        self.model._initial_epoch = metadata["epoch"]
        states = metadata.get("callbacks") or []
        if len(states) != len(self.tracked):
            raise ValueError(
                f"Backup {self.backup_dir!r} holds the state of {len(states)} "
                f"callbacks; expected {len(self.tracked)} (delete it to start afresh)."
            )
        for callback, state in zip(self.tracked, states, strict=True):
            for name, value in state.items():
                if isinstance(getattr(callback, name), int) and value is not None:
                    value = int(value)
                setattr(callback, name, value)
        self._load_seed_generators(metadata.get("seed_generators"))

    def _load_seed_generators(self, states):
        if states is None:  # a backup from before they were kept
            return
        generators = seed_generators(self.model)
        if len(states) != len(generators):
            raise ValueError(
                f"Backup {self.backup_dir!r} holds the state of {len(states)} seed "
                f"generators; expected {len(generators)}, the model's (delete it "
                "to start afresh)."
            )
        for generator, state in zip(generators, states, strict=True):
            generator.state.assign(np.asarray(state, dtype=generator.state.dtype))
