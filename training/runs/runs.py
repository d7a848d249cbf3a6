"""Run directories: training a recipe into one, and reading it back.

A run directory holds `recipe.json` (the resolved recipe, seed included),
`vocabulary.json`, `best.keras` (the best model by validation loss),
`backup/` (`BackupAndRestore`, while training), `log.csv`, `tensorboard/`,
`metrics.json`, `.train.lock` (locked while a process trains there; it names
that process) and, after export, `saved_model/`; `training.runs.run_dirs` says
which folders training may write and in which state a run is.

- `train_run(recipe, run_dir)` trains a resolved recipe there and returns its
  metrics (what `python -m training.train` runs);
- `load_run(run_dir)` rebuilds the finished run's model from `recipe.json`
  and `vocabulary.json` with the best weights, reading no data (what export,
  generation, evaluation and analyses start from);
- `initial_model(run_dir)` rebuilds it with the weights it had before its
  first training step (the baseline of an analysis of trained weights).
"""

import collections
import contextlib
import math
import shutil
import tempfile
from pathlib import Path

import keras

import zoo
from training.core import backends, compile_mode, file_schema, fitting
from training.core.callbacks import AtomicModelCheckpoint, RunBackup
from training.data.tokenize import Vocabulary
from training.runs import run_dirs, run_files
from training.runs.run_dirs import (  # noqa: F401 (re-exported: this module's API too)
    BACKUP,
    BEST,
    JIT_COMPILE,
    LOG,
    METRICS,
    RECIPE,
    STEPS_PER_EXECUTION,
    TENSORBOARD,
    TRAIN_LOCK,
    VOCABULARY,
    RunError,
    lock_run_dir,
    read_json,
    write_json,
)
from training.tasks import make_task, recipes
from zoo.initializers import weights_to_be_loaded
from zoo.tensorflow_steps import groups_steps

# The keys of metrics.json that record the compile mode, the steps per
# call of the train function and the Keras backend of the run (not splits).
# (`run_dirs` names the first two: a backup keeps them too.)
BACKEND = "backend"
# Whether a group of steps ran as one XLA program (`grouped_steps`).
GROUPED_STEPS = "grouped_steps"
# Those that say how the run executed its steps (a preset's card omits them).
EXECUTION = (JIT_COMPILE, STEPS_PER_EXECUTION, GROUPED_STEPS)
# Where a CLI takes a run directory, `preset:NAME` takes a preset (`check_run`).
PRESET_PREFIX = "preset:"


class Run(collections.namedtuple("Run", ["recipe", "tokenizer", "task", "model"])):
    """A finished run: its recipe, tokenizer (`zoo.tokenizer.Tokenizer`, as
    `zoo.from_preset` gives it), task (no data read) and model."""

    __slots__ = ()

    @property
    def vocabulary(self):
        """The task's training `Vocabulary` (ids of data, `decode`, `encode`)."""
        return self.task.vocabulary


def read_recipe(path):
    """The `Recipe` a run saved at `path`, keys added since at their defaults.

    A one-line `RunError` naming the file and the field unless it is a recipe
    (`training.core.file_schema.Recipe`: every check `recipes.resolve` makes);
    one of an earlier format names `python -m training.migrate`.
    """
    return _recipe(read_json(path), path)


def _recipe(value, path):
    return file_schema.check(
        value, file_schema.Recipe(recipes.from_saved), path, RunError
    )


def is_preset(run_dir):
    """Whether `run_dir` names a preset (`preset:NAME` or `preset:PATH`)."""
    return str(run_dir).startswith(PRESET_PREFIX)


def read_only(run_dir):
    """Whether `run_dir` is a preset, named (`is_preset`) or a folder holding
    `card.json`: commands read it and write nothing into it."""
    return is_preset(run_dir) or (Path(run_dir) / run_dirs.CARD).is_file()


def check_run(run_dir, needs=(RECIPE, VOCABULARY, BEST)):
    """Returns `run_dir` as a `Path`; a `RunError` unless it holds `needs`.

    `preset:NAME` (a built-in preset) or `preset:PATH` stands for that
    preset's directory (`zoo.presets.preset_dir`), which is a run directory:
    every CLI that reads a run reads a preset through here.
    """
    if is_preset(run_dir):
        try:
            run_dir = zoo.presets.preset_dir(str(run_dir)[len(PRESET_PREFIX) :])
        except ValueError as error:
            raise RunError(str(error)) from None
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunError(f"Run directory {str(run_dir)!r} does not exist.")
    run_files.check_no_links(run_dir)  # a one-line ValueError naming a link
    for name in needs:
        if not (run_dir / name).exists():
            raise RunError(
                f"Run directory {str(run_dir)!r} has no {name}; expected a "
                "directory written by python -m training.train."
            )
    return run_dir


def run_directory_callbacks(run_dir, monitor, facts=None):
    """The callbacks that write into a run directory: backup, best model, logs.

    `facts` are saved with each backup (`RunBackup`). `monitor` is a
    validation loss (`Task.monitor`): the best model is its lowest.
    """
    return [
        RunBackup(run_dir / BACKUP, log_path=run_dir / LOG, facts=facts),
        AtomicModelCheckpoint(
            run_dir / BEST, monitor=monitor, mode="min", save_best_only=True
        ),
        keras.callbacks.CSVLogger(str(run_dir / LOG), append=True),
        keras.callbacks.TensorBoard(str(run_dir / TENSORBOARD), write_graph=False),
    ]


def train_run(recipe, run_dir, verbose=0, callbacks=()):
    """Trains a resolved recipe in `run_dir`; returns the metrics it writes.

    Seeds Python, NumPy and TensorFlow with `train.seed`, chooses whether
    to compile with XLA (`compile_choice`; op determinism on without it) and
    how many steps each call runs (`steps_choice`),
    writes `recipe.json` and `vocabulary.json`, fits with
    `training.core.fitting.fit` (checkpoints, backup and logs in `run_dir`), then
    evaluates the best model on every split of the task and writes
    `metrics.json`, with the compile mode under `"jit_compile"`, the steps
    per call under `"steps_per_execution"`, whether a group of them ran as
    one XLA program under `"grouped_steps"` (`grouped_steps`) and the
    Keras backend (`KERAS_BACKEND`) and its version under `"backend"`. Nothing is
    written until everything that can refuse the run has passed (the run
    directory, the data, the model and its options), and the run directory
    is locked while it is written (`lock_run_dir`): a second process training
    into it is refused. A run directory that already holds this recipe
    resumes from its backup; a finished run is trained again from the start
    in its `attempt/` folder, resumed there, and moved over the finished one
    only when it finishes (`run_dirs`), so the finished run's files stay as
    they were until then. One that holds another recipe, a preset, a record
    of results/, files its manifest does not list (`run_files`) or a link is
    a `RunError`, and so is a backup whose metadata cannot be resumed from
    (`run_dirs.read_backup`). The model is built and fitted in the scope of
    `training.core.fitting.distribution_strategy` (`train.distribute`); in a
    multi-worker run only the chief writes `run_dir`, the other workers
    train in temporary directories and return their (equal) metrics. Prints
    nothing but Keras's progress at `verbose`.

    Args:
        recipe: A recipe from `training.tasks.recipes.resolve`.
        run_dir: The run directory (created if missing).
        verbose: `model.fit`'s verbosity. Default: 0 (silent).
        callbacks: More Keras callbacks for `model.fit`.

    Returns:
        `{split: metrics}` for each of the task's splits,
        `{"jit_compile": {"used": bool, "reason": str}}`,
        `{"steps_per_execution": {"used": int, "reason": str}}`,
        `{"grouped_steps": {"used": bool, "reason": str}}` and
        `{"backend": {"name": str, "version": str}}`, as in
        `metrics.json`; `make_task(recipe).report(metrics[split], split)`
        formats one.

    Raises:
        RunError: `run_dir` is a file or `preset:NAME`, is not a run
            directory, holds another recipe, or is locked by another process.
        ValueError: its backup cannot be resumed from (one line naming the
            file and field; nothing written).
    """
    if is_preset(run_dir):
        raise RunError(
            f"{str(run_dir)!r} names a preset, which training never writes; "
            "expected a run directory (a new --run-dir)."
        )
    run_dir = Path(run_dir)
    _refuse_file(run_dir)
    strategy = fitting.distribution_strategy(recipe.train)  # before other ops
    if fitting.is_chief(recipe.train):
        return _train_in(recipe, Path(run_dir), strategy, verbose, callbacks)
    # A multi-worker run's other workers write to a temporary directory of their
    # own, as the tf.distribute guide prescribes; only the chief's is kept.
    with tempfile.TemporaryDirectory(prefix="zoo-worker-") as scratch:
        return _train_in(recipe, Path(scratch), strategy, verbose, callbacks)


def _refuse_file(run_dir):
    if run_dir.exists() and not run_dir.is_dir():
        raise RunError(
            f"Run directory {str(run_dir)!r} is a file; expected a directory."
        )


def check_run_dir(
    run_dir, recipe, advice="a new --run-dir or the same recipe and overrides"
):
    """Refuses a `run_dir` that cannot hold a run of `recipe`; reads only.

    A one-line `RunError` if it is a file, a folder the project did not make
    as a run directory (`run_dirs.check_owned`: a preset, a record, a folder
    holding other files) or holds another recipe (`advice` says what to do
    instead), or if its `recipe.json` is not JSON; a new directory, or one
    holding this recipe (to resume or train again), passes.
    """
    run_dir = Path(run_dir)
    _refuse_file(run_dir)
    run_dirs.check_owned(run_dir)
    for folder in (run_dir, run_dirs.attempt_dir(run_dir)):
        recipe_path = folder / RECIPE
        if recipe_path.exists() and read_recipe(recipe_path) != recipe:
            raise RunError(
                f"Run directory {str(run_dir)!r} holds a different recipe; expected "
                f"{advice}."
            )


def _plan(recipe, run_dir):
    """Where a run of `recipe` trains in `run_dir`, and the backup it resumes.

    `(folder, backup metadata or None)`: the folder is `run_dir` itself, or
    its attempt folder when it holds a finished run (`run_dirs`); `(None,
    None)` when a finished attempt waits to be moved in. Reads only: a
    `RunError` as `check_run_dir` gives, a `ValueError` naming the backup's
    file and field when it cannot be resumed from (`read_backup`).
    """
    check_run_dir(run_dir, recipe)
    found = run_dirs.state(run_dir)
    if found == run_dirs.PROMOTING:
        return None, None
    folder = run_dirs.attempt_dir(run_dir) if found == run_dirs.FINISHED else run_dir
    return folder, run_dirs.read_backup(recipe, folder)


def _train_in(recipe, run_dir, strategy, verbose, callbacks):
    # Every check before the first write: the run directory (its owner,
    # recipe and backup), the data, the model (its options are checked when
    # it is built).
    _plan(recipe, run_dir)
    task, model = _seeded_start(recipe, strategy)  # reads the data
    run_dir.mkdir(parents=True, exist_ok=True)
    run_files.record(run_dir, *run_dirs.TRAINING)  # before they are written
    with lock_run_dir(run_dir), strategy.scope():
        # Again under the lock: another process may have trained here since.
        folder, backup = _plan(recipe, run_dir)
        if folder is None:  # a re-run that finished, cut off while moved in
            run_dirs.promote(run_dir)
            return read_json(run_dir / METRICS)
        if backup is None and folder != run_dir:  # an attempt with no epoch
            shutil.rmtree(folder, ignore_errors=True)
        metrics = _fit_in(recipe, task, model, folder, backup, verbose, callbacks)
        if folder != run_dir:  # a finished run trained again
            run_dirs.promote(run_dir)
    return metrics


def _fit_in(recipe, task, model, folder, backup, verbose, callbacks):
    """Trains the seeded `model` in `folder` from `backup` (or the start),
    evaluates its best model and writes `metrics.json` last."""
    jit = compile_choice(task, backup)
    steps = steps_choice(task, jit.used, backup)
    compile_mode.configure_determinism(jit.used)
    folder.mkdir(exist_ok=True)
    write_json(folder / RECIPE, recipe.to_dict())
    log = folder / LOG
    if backup is None:  # an unfinished run starts afresh
        log.unlink(missing_ok=True)
        (folder / BEST).unlink(missing_ok=True)
    elif log.exists():  # drop the rows of epochs the backup does not hold
        with open(log, "r+b") as file:
            file.truncate(backup["log_size"] or 0)
    (folder / VOCABULARY).write_text(task.vocabulary.to_json())
    facts = {JIT_COMPILE: jit._asdict(), STEPS_PER_EXECUTION: steps._asdict()}
    history = fitting.fit(
        model,
        task,
        callbacks=[*run_directory_callbacks(folder, task.monitor, facts), *callbacks],
        verbose=verbose,
        jit_compile=jit.used,
        steps_per_execution=steps.used,
    )
    losses = history.history.get("loss", [])
    if not all(math.isfinite(loss) for loss in losses):
        raise RunError(
            f"Training diverged: the loss became {losses[-1]} in epoch "
            f"{len(losses)} and TerminateOnNaN stopped the run; expected finite "
            "losses (try a lower train.learning_rate)."
        )
    best = load_best(task, folder / BEST)
    metrics = {split: task.evaluate(best, split) for split in task.splits}
    metrics.update(facts)
    metrics[GROUPED_STEPS] = grouped_steps(model)
    metrics[BACKEND] = backends.describe()
    write_json(folder / METRICS, metrics)
    return metrics


def grouped_steps(model):
    """Whether `model`'s groups of steps ran as one XLA program, and why.

    `zoo.tensorflow_steps` runs them so on TensorFlow with XLA and more than
    one step a call; Keras's own train function (a TensorFlow loop around the
    compiled step, or JAX's Python loop) runs them otherwise.
    """
    if groups_steps(model):
        reason = (
            f"{model.steps_per_execution} steps in one XLA call (zoo.tensorflow_steps)"
        )
        return {"used": True, "reason": reason}
    return {"used": False, "reason": "Keras's train function"}


def _seeded_start(recipe, strategy=None, vocabulary=None):
    """The task and untrained model of a run of `recipe`, as its first step has them.

    Seeds Python, NumPy and TensorFlow with `train.seed`, makes the task
    (with `vocabulary`, or its own, read from its data) and builds its model
    (in `strategy`'s scope, if given): the random draws `train_run` makes
    before training, in its order, which `initial_model` repeats. Reading
    the data draws from no global generator (the tasks seed their own), so
    a saved `vocabulary` gives the same draws as the data; nor does a
    strategy's scope, so one is not needed to repeat them.
    """
    keras.utils.set_random_seed(recipe.train.seed)
    task = make_task(recipe, vocabulary=vocabulary)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        model = task.build_model()
    return task, model


def seeded_model(recipe, vocabulary):
    """The model a run of `recipe` trains, before its first step: its weights
    and random generators as built (`_seeded_start`, which seeds the global
    generators as training does)."""
    return _seeded_start(recipe, vocabulary=vocabulary)[1]


def compile_choice(task, backup=None):
    """Whether the run compiles with XLA, and why (`compile_mode.Choice`).

    A resumed run keeps the choice (and reason) its backup recorded
    (`run_dirs.read_backup` checked it is there), so it ends as an
    uninterrupted run does.
    """
    if backup is None:
        return compile_mode.for_task(task)
    saved = backup["facts"][JIT_COMPILE]
    return compile_mode.Choice(bool(saved["used"]), saved["reason"])


def steps_choice(task, jit_compile, backup=None):
    """How many training steps each call runs, and why (`compile_mode.Choice`).

    A resumed run keeps its backup's choice, as `compile_choice` does.
    """
    if backup is None:
        return compile_mode.steps_for_task(task, jit_compile)
    saved = backup["facts"][STEPS_PER_EXECUTION]
    return compile_mode.Choice(int(saved["used"]), saved["reason"])


def load_best(task, path):
    """The task's stateless model with the weights at `path`, ready to evaluate.

    With `train.eval_temperature`, every second-order cell is set to that
    tau (the second-order LSTM report evaluates "arbitrarily low").
    """
    with weights_to_be_loaded():  # built only to take the file's weights
        model = task.build_model(stateful=False)
    try:
        zoo.presets.load_weights(model, path)
    except ValueError as error:
        raise RunError(str(error)) from None
    return for_evaluation(task, model)


def for_evaluation(task, model):
    """`model` (with its trained weights) as the task evaluates it: with
    `train.eval_temperature`, every second-order cell set to that tau."""
    temperature = task.recipe.train.eval_temperature
    if temperature is not None:
        zoo.set_temperature(model, temperature)
    return model


def load_vocabulary(run_dir):
    """The `Vocabulary` a run directory saved."""
    with _loader_errors():
        return _vocabulary(zoo.presets.PresetLoader(run_dir))


@contextlib.contextmanager
def _loader_errors():
    """The preset loader's one-line errors as `RunError`s."""
    try:
        yield
    except ValueError as error:
        raise RunError(str(error)) from None


def _vocabulary(loader):
    """The training `Vocabulary` of `loader`'s `vocabulary.json`."""
    config = loader.vocabulary()
    try:
        return Vocabulary.from_config(config)
    except (ValueError, KeyError, TypeError) as error:
        raise RunError(
            f"{str(loader.directory / VOCABULARY)!r} cannot be read ("
            f"{type(error).__name__}: {error}); expected the vocabulary "
            "python -m training.train wrote."
        ) from None


def initial_model(run_dir):
    """The model of a run as it was before its first training step; reads no data.

    Rebuilt from `recipe.json` and `vocabulary.json` with the random draws
    training made before its first step (`train.seed`, the same order), so
    every weight equals the run's initial one under the Keras and backend
    versions it was trained with (their random generators draw the weights;
    `metrics.json`'s `backend` records the backend's) and the zoo's
    per-weight seeds (`zoo.initializers`: a zoo cell's run trained before
    issue 41 drew other initial weights). The baseline of an analysis of
    trained weights, such as PABS.
    Needs no `best.keras`, so an unfinished run has one too. Seeds the global
    random generators as training does.

    Returns:
        The stateless model (any batch size), as `load_run`'s, with the
        initial weights; a second-order LSTM keeps its initial temperature
        (not `train.eval_temperature`).
    """
    run_dir = check_run(run_dir, needs=(RECIPE, VOCABULARY))
    recipe = read_recipe(run_dir / RECIPE)
    task, model = _seeded_start(recipe, vocabulary=load_vocabulary(run_dir))
    stateless = task.build_model(stateful=False)  # a stateful one takes one batch
    stateless.set_weights(model.get_weights())
    return stateless


def load_run(run_dir, precision=None):
    """Returns the `Run` (recipe, tokenizer, task, model) of a finished run.

    Reads `recipe.json`, `vocabulary.json` and `best.keras` only, through the
    preset loader (`zoo.presets.PresetLoader`; `run_dir` may be a preset:
    `preset:NAME`, `preset:PATH` or its folder): the task is made with the
    saved vocabulary and reads no data until asked to (its `evaluate`
    does), so export and generation work without the data directory. The
    model is rebuilt from the recipe (stateless) and given the best
    weights, so it works at any batch size; `run.task.build_model(
    stateful=True, batch_size=...)` rebuilds it in other forms. The
    tokenizer is the one `zoo.from_preset` gives (in the task's conventions
    where the vocabulary names none).

    Args:
        run_dir: The run directory.
        precision: The dtype policy to rebuild the model under (one of
            `training.core.config.train_options.PRECISIONS`), e.g. `"float32"` for
            a run trained in mixed precision; the run's `recipe` and `task`
            then carry it.
            Default: the run's own `train.precision`.
    """
    run_dir = check_run(run_dir)
    with _loader_errors():
        loader = zoo.presets.PresetLoader(run_dir)
        config = loader.config()
    recipe = _recipe(config, run_dir / RECIPE)
    if precision is not None:  # a `RecipeError` (ValueError) unless one of them
        recipe = recipe.with_values({"train.precision": precision})
    with _loader_errors():
        task = make_task(recipe, vocabulary=_vocabulary(loader))
        with weights_to_be_loaded():  # built only to take the file's weights
            model = task.build_model(stateful=False)
        model = loader.load_model(model)
        tokenizer = loader.tokenizer()
    return Run(recipe, tokenizer, task, for_evaluation(task, model))
