"""Training callbacks: state resets, temperature annealing, per-epoch metrics,
exact resumption."""

import json
import math
import numbers
import os
import secrets
import shutil
from pathlib import Path

import h5py
import keras
import numpy as np

import zoo
from zoo import keras_compat
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
        self._reset_states()

    def on_train_batch_begin(self, batch, logs=None):
        if self.every is not None and batch > 0 and batch % self.every == 0:
            self._reset_states()

    def on_test_begin(self, logs=None):
        self._reset_states()

    def on_test_end(self, logs=None):
        self._reset_states()

    def _reset_states(self):
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
            tau = float(keras.ops.convert_to_numpy(cell.temperature.value))
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
    number is logged as `prefix + name`. `training.core.fitting.fit` runs these
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


def close_logs(callbacks):
    """Closes the file of each `CSVLogger` in `callbacks` that is still open.

    `CSVLogger` closes it in `on_train_end`, which an exception out of
    `model.fit` skips: the file stayed open (a `ResourceWarning`, and one
    handle more per failed trial in a long tuner process).
    """
    for callback in callbacks:
        if isinstance(callback, keras.callbacks.CSVLogger):
            file = getattr(callback, "csv_file", None)
            if file is not None and not file.closed:
                file.close()


def write_atomically(path, text):
    """Writes `text` to `path` through a temporary file and `os.replace`.

    A reader never sees half a file; the temporary file is this call's own
    (`NAME.partial-PID-RANDOM`), so writers of the same path never write
    into each other's, and it is removed when the write fails.
    """
    path = Path(path)
    partial = path.with_name(
        f"{path.name}.partial-{os.getpid()}-{secrets.token_hex(4)}"
    )
    try:
        partial.write_text(text)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


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


def _kind_of(callback):
    return next((kind for kind in CALLBACK_STATE if isinstance(callback, kind)), None)


def _state_of(callback):
    kind = _kind_of(callback)
    if kind is None:
        return None
    values = {name: getattr(callback, name) for name in CALLBACK_STATE[kind]}
    return {name: None if v is None else float(v) for name, v in values.items()}


def backup_field_error(path, field, value, expected):
    """The one-line `ValueError` of a backup whose `field` (in the file
    `path`) holds `value` instead of what was `expected`."""
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return ValueError(
        f"Backup {str(path)!r}: {field} is {shown}; expected {expected} (delete "
        f"{str(Path(path).parent)!r} to start afresh)."
    )


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_metadata(metadata, path, epochs=None, log_path=None):
    """Checks a backup's metadata (read from `path`) field by field.

    A one-line `ValueError` (`backup_field_error`) for the first field that
    is not what `RunBackup` writes: `epoch` an integer from 0 to `epochs`,
    `weights` a file name in the backup, `callbacks` a list of states (each
    an object of numbers or nulls), `seed_generators` a list of lists of
    integers, `log_size` null or from 0 to the size of `log_path`, `facts`
    an object.
    """
    if not isinstance(metadata, dict):
        raise backup_field_error(path, "the file", metadata, "a JSON object")
    epoch = metadata.get("epoch")
    if not _is_int(epoch) or epoch < 0 or (epochs is not None and epoch > epochs):
        top = "" if epochs is None else f" to {epochs} (train.epochs)"
        raise backup_field_error(path, "epoch", epoch, f"an integer from 0{top}")
    weights = metadata.get("weights")
    if (
        not isinstance(weights, str)
        or weights in ("", ".", "..")
        or (Path(weights).name != weights)
    ):
        raise backup_field_error(path, "weights", weights, "a file name")
    states = metadata.get("callbacks")
    if states is not None:
        if not isinstance(states, list):
            raise backup_field_error(path, "callbacks", states, "a list")
        for index, state in enumerate(states):
            if not isinstance(state, dict) or not all(
                value is None or _is_number(value) for value in state.values()
            ):
                expected = "an object of numbers or nulls"
                raise backup_field_error(path, f"callbacks[{index}]", state, expected)
    generators = metadata.get("seed_generators")
    if generators is not None and not (
        isinstance(generators, list)
        and all(
            isinstance(state, list) and all(_is_int(v) for v in state)
            for state in generators
        )
    ):
        expected = "a list of lists of integers"
        raise backup_field_error(path, "seed_generators", generators, expected)
    log_size = metadata.get("log_size")
    if log_size is not None:
        exists = log_path is not None and Path(log_path).is_file()
        top = Path(log_path).stat().st_size if exists else None
        too_big = top is not None and _is_int(log_size) and log_size > top
        if not _is_int(log_size) or log_size < 0 or too_big:
            limit = "" if top is None else f" to {top} (the size of {str(log_path)!r})"
            raise backup_field_error(
                path, "log_size", log_size, f"null or an integer from 0{limit}"
            )
    facts = metadata.get("facts")
    if facts is not None and not isinstance(facts, dict):
        raise backup_field_error(path, "facts", facts, "an object")


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
        for generator in keras_compat.seed_generators(layer):
            found.setdefault(id(generator), generator)
    return list(found.values())


class RunBackup(keras.callbacks.Callback):
    """A `BackupAndRestore` that resumes exactly where an uninterrupted run would be.

    As Keras's callback does, it restores the last backup when training
    begins (`model.fit` then resumes after its epoch:
    `zoo.keras_compat.set_initial_epoch`), backs up at each epoch end and
    deletes the folder when training ends; it is written on `Callback`'s
    public hooks, not on `BackupAndRestore`'s private ones. Keras's backup
    keeps the weights, optimizer and epoch; this one also keeps the state of
    the other callbacks (`ModelCheckpoint`'s best value,
    `EarlyStopping`'s and `ReduceLROnPlateau`'s counters, `CALLBACK_STATE`),
    the state of every seed generator of the model (`seed_generators`: the
    resumed run draws the dropout masks and noise the uninterrupted one
    would) and the size `log_path` had, and commits them atomically at each
    epoch end: the weights go to `epoch-N.weights.h5`, then
    `training_metadata.json` naming them is replaced in one `os.replace`, so
    a kill at any point leaves the last whole epoch's backup. It must run
    after the callbacks it tracks (`training.core.fitting.fit` puts it last).
    A backup that cannot be read is a one-line `ValueError`; one written
    before seed generators were kept resumes with the generators as built.

    Args:
        backup_dir: The folder of the backup (deleted when training ends).
        log_path: The `CSVLogger` file whose size is recorded, or `None`.
        facts: A JSON-serializable dict saved with every backup (e.g. the
            run's compile mode, which a resumed run keeps); `read_metadata`
            returns it under `"facts"`.
    """

    METADATA = "training_metadata.json"  # Keras's name for it

    def __init__(self, backup_dir, log_path=None, facts=None):
        super().__init__()
        self.backup_dir = str(backup_dir)
        self.log_path = None if log_path is None else Path(log_path)
        self.facts = dict(facts or {})
        self.tracked = []

    def track(self, callbacks):
        """Sets the callbacks whose state is saved and restored."""
        kinds = tuple(CALLBACK_STATE)
        self.tracked = [c for c in callbacks if isinstance(c, kinds)]

    @staticmethod
    def read_metadata(backup_dir, epochs=None, log_path=None):
        """The committed metadata of a backup folder, or `None` if it has none.

        Every field is checked before it is used (`check_metadata`): a
        one-line `ValueError` names the file, the field and what was
        expected, as it does for a backup that is a file. `epochs` bounds
        its epoch; its `log_size` must lie within the file at `log_path`.
        """
        backup_dir = Path(backup_dir)
        if backup_dir.exists() and not backup_dir.is_dir():
            raise ValueError(
                f"Backup {str(backup_dir)!r} is a file; expected the folder "
                "python -m training.train writes (move it away to start afresh)."
            )
        path = backup_dir / RunBackup.METADATA
        if not path.exists():
            return None
        try:
            metadata = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            raise ValueError(
                f"Backup {str(path)!r} is not a backup written by this version; "
                f"expected its JSON (delete {str(backup_dir)!r} to start afresh)."
            ) from None
        check_metadata(metadata, path, epochs, log_path)
        weights = backup_dir / metadata["weights"]
        if not h5py.is_hdf5(weights):
            raise ValueError(
                f"Backup weights {str(weights)!r} cannot be read (not an HDF5 "
                f"file); expected the backup's weights (delete {str(backup_dir)!r} "
                "to start afresh)."
            )
        return metadata

    def on_train_begin(self, logs=None):
        self._restore()

    def on_epoch_end(self, epoch, logs=None):
        self._back_up(epoch + 1)

    def on_train_end(self, logs=None):
        if Path(self.backup_dir).exists():
            shutil.rmtree(self.backup_dir)

    def _back_up(self, epoch):
        """Commits the backup of the model after `epoch` epochs."""
        folder = Path(self.backup_dir)
        folder.mkdir(parents=True, exist_ok=True)
        weights = folder / f"epoch-{epoch}.weights.h5"
        partial = folder / "partial.weights.h5"
        self.model.save_weights(str(partial), overwrite=True)
        os.replace(partial, weights)
        log_size = None
        if self.log_path is not None and self.log_path.exists():
            log_size = self.log_path.stat().st_size
        metadata = {
            "epoch": epoch,
            "batch": 0,  # Keras's field: the batch of the epoch, 0 at its end
            "weights": weights.name,
            "callbacks": [_state_of(callback) for callback in self.tracked],
            "seed_generators": [
                keras.ops.convert_to_numpy(generator.state.value).tolist()
                for generator in seed_generators(self.model)
            ],
            "log_size": log_size,
            "facts": self.facts,
        }
        write_atomically(folder / self.METADATA, json.dumps(metadata))
        for old in folder.glob("epoch-*.weights.h5"):
            if old != weights:
                old.unlink()

    def _restore(self):
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
        keras_compat.set_initial_epoch(self.model, metadata["epoch"])
        states = metadata.get("callbacks") or []
        if len(states) != len(self.tracked):
            raise ValueError(
                f"Backup {self.backup_dir!r} holds the state of {len(states)} "
                f"callbacks; expected {len(self.tracked)} (delete it to start afresh)."
            )
        pairs = list(zip(self.tracked, states, strict=True))
        for index, (callback, state) in enumerate(pairs):
            names = CALLBACK_STATE[_kind_of(callback)]
            counters = [
                value
                for name, value in state.items()
                if isinstance(getattr(callback, name, None), int) and value is not None
            ]
            if set(state) != set(names) or not all(map(math.isfinite, counters)):
                raise backup_field_error(
                    Path(self.backup_dir) / self.METADATA,
                    f"callbacks[{index}]",
                    state,
                    f"the state of a {type(callback).__name__} ({', '.join(names)})",
                )
        for callback, state in pairs:
            for name, value in state.items():
                if isinstance(getattr(callback, name), int) and value is not None:
                    value = int(value)
                setattr(callback, name, value)
        self._load_seed_generators(metadata.get("seed_generators") or [])

    def _load_seed_generators(self, states):
        generators = seed_generators(self.model)
        if len(states) != len(generators):
            raise ValueError(
                f"Backup {self.backup_dir!r} holds the state of {len(states)} seed "
                f"generators; expected {len(generators)}, the model's (delete it "
                "to start afresh)."
            )
        for generator, state in zip(generators, states, strict=True):
            generator.state.assign(np.asarray(state, dtype=generator.state.dtype))
