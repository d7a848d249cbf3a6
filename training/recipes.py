"""Experiment recipes: one TOML file per experiment of the papers.

A recipe has four tables: `task` (what data and metrics), `model` (the zoo
builder's arguments; `model.options` goes to the cell), `train` (optimizer,
epochs, callbacks) and `small`, which holds the same tables again with the
values that shrink the experiment from the paper's scale to minutes on 2 CPU
cores. `resolve` merges the defaults, the recipe, the scale and the user's
`key=value` overrides, rejects any key it does not know, and checks the
combination (`check`) before any data is built.
"""

import collections
import copy
import json
import math

import zoo
from training import recipe_files
from training.data import corpora, dyck_oracle, languages, recognition_sets
from zoo.labeling import POOLINGS

SCALES = recipe_files.SCALES
# The task kinds (`training.tasks.TASKS` has a class for each).
KINDS = (
    "dyck",
    "closing_bracket",
    "recognition",
    "language_model",
    "dyck_depth",
    "acceptability",
)
# The kinds whose models label text they read whole (a tagger, a classifier):
# only they may read right to left (`model.bidirectional`).
LABELING_KINDS = ("dyck_depth", "acceptability")
# The kinds whose model is a classifier (`model.pooling`).
CLASSIFIER_KINDS = ("acceptability",)
STEP_LABELS = ("string", "prefix")
# Which recognition strings train the next-symbol head (see RecognitionTask).
NEXT_SYMBOL_LOSSES = ("all", "positives")
# `train.distribute`: one device, `tf.distribute.MirroredStrategy` over this
# host's devices, or `MultiWorkerMirroredStrategy` over the hosts of TF_CONFIG.
DISTRIBUTE = ("none", "mirrored", "multi_worker")
# `train.precision`: the Keras dtype policy the models are built under (float32
# weights in every case; "mixed_*" computes in bfloat16 or float16).
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")

# Every key a recipe may set, with its default; `None` means "no default".
DEFAULTS = {
    "description": "",
    "source": "",
    "task": {
        "kind": None,  # one of KINDS
        # Dyck-(k, m)
        "k": 2,
        "m": 4,
        "train_sequences": 10_000,
        "dev_sequences": 4_000,
        "test_sequences": 10_000,
        "train_min_length": 1,  # train and dev strings: fewest brackets (END redrawn)
        "train_max_length": None,  # longest, END included; None: Hewitt's 8m(m-2)+60
        # recognition
        "language": "D2",
        "split_scale": 1.0,
        "step_labels": "string",  # or "prefix": per-step targets of `accept`
        "hard_negatives": "swap",  # or "edit": how hard negatives are made
        # "all" strings or only "positives" train the next-symbol head
        "next_symbol_loss": "all",
        # language modelling
        "corpus": "ptb",
        "level": "char",
        "data_dir": None,
        "sequence_length": 100,
        "train_cutoff": None,  # cut training lines at this many characters
        # acceptability (minimal-pair suites; data_dir as above)
        "pairs_per_suite": None,  # the first N pairs of each suite; None: all
        "split_seed": 0,  # draws the held-out suites
    },
    "model": {
        "cell": None,
        "units": 64,
        "embedding_dim": None,
        "num_layers": 1,
        "dropout": 0.0,
        "output_dropout": None,
        "tie_embeddings": False,
        "bidirectional": False,  # taggers and classifiers only
        "pooling": "last",  # classifiers: one of zoo.labeling.POOLINGS
        "options": {},
    },
    "train": {
        "seed": 0,
        "epochs": 10,
        "batch_size": 32,
        "learning_rate": 1e-3,
        "final_learning_rate": None,  # linear decay to this value (mLSTM paper)
        "clipnorm": 1.0,
        "clipvalue": None,  # element-wise gradient clipping; replaces clipnorm
        "curriculum": False,  # incremental training: short strings first
        "early_stopping_patience": 5,
        "reduce_lr_patience": None,
        "reduce_lr_factor": 0.5,
        "temperature_factor": None,  # second-order LSTM annealing (0.9)
        "temperature_min": 0.05,
        "eval_temperature": None,  # tau set for evaluation (second-order LSTM)
        "stop_below_loss": None,  # stop once the validation loss is below it
        "stateful": False,
        "reset_every": None,  # stateful: also zero the state every N batches
        "max_steps_per_epoch": None,
        "distribute": "none",  # one of DISTRIBUTE; batch_size stays global
        "precision": "float32",  # one of PRECISIONS
        # XLA: "auto" (training.compile_mode's rule), true or false
        "jit_compile": "auto",
        # training steps per compiled call: "auto" (compile_mode's rule) or N
        "steps_per_execution": "auto",
        # language models: train the decoder on N sampled negative classes a
        # step (training.sampled_softmax); 0: the full softmax
        "sampled_softmax": 0,
    },
}


class RecipeError(ValueError):
    """A recipe or override the user gave is wrong; the message is one line."""


def with_defaults(recipe):
    """`recipe` (a saved, resolved one) with every key it lacks set to its default.

    A key added to `DEFAULTS` after a run was trained defaults to the
    behaviour that run had, so the run's `recipe.json` read through this
    equals what `resolve` gives today for the same command.
    """
    recipe = copy.deepcopy(recipe)
    for section, defaults in DEFAULTS.items():
        if isinstance(defaults, dict) and isinstance(recipe.get(section), dict):
            for key, value in defaults.items():
                recipe[section].setdefault(key, copy.deepcopy(value))
    return recipe


def available_recipes():
    """Returns the sorted names of the recipe files."""
    return recipe_files.available(recipe_files.RECIPE_DIR)


def _flat_keys(table, prefix=""):
    keys = []
    for key, value in table.items():
        if isinstance(value, dict) and key != "options":
            keys += _flat_keys(value, f"{prefix}{key}.")
        else:
            keys.append(f"{prefix}{key}")
    return keys


def _merge(base, update, where):
    for key, value in update.items():
        if key == "small" and not where:
            continue
        if key not in base:
            valid = ", ".join(_flat_keys(base, where))
            raise RecipeError(
                f"Unknown recipe key {where + key!r}; valid keys: {valid}."
            )
        if isinstance(base[key], dict) and not isinstance(value, dict):
            raise RecipeError(f"Recipe key {where + key!r} must be a table.")
        if key == "options":
            base[key] = {**base[key], **value}
        elif isinstance(base[key], dict):
            _merge(base[key], value, f"{where}{key}.")
        else:
            base[key] = value  # its type is checked once merged (`check`)


def parse_override(text):
    """Parses `a.b=value` into (["a", "b"], value); values are JSON or strings."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise RecipeError(f"Override {text!r} must look like section.key=value.")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.split("."), value


def resolve(name, scale="small", overrides=()):
    """Returns the recipe `name` at `scale` with `overrides` applied.

    `name` is a recipe in `training/recipes/` or a path to a `.toml` file.

    Raises:
        RecipeError: unknown recipe, scale or key, or a malformed override.
    """
    path = recipe_files.find(name, recipe_files.RECIPE_DIR, "recipe", RecipeError)
    name = path.stem
    if scale not in SCALES:
        raise RecipeError(f"Unknown scale {scale!r}; expected one of: small, paper.")
    recipe = recipe_files.read(path, "recipe", RecipeError)
    resolved = copy.deepcopy(DEFAULTS)
    _merge(resolved, recipe, "")
    if scale == "small":
        _merge(resolved, recipe.get("small", {}), "")
    for text in overrides:
        path, value = parse_override(text)
        if path == ["model", "options"]:  # the whole table: replace, not merge
            if not isinstance(value, dict):
                raise RecipeError(
                    f"model.options must be a JSON object; received {value!r}."
                )
            resolved["model"]["options"] = value
            continue
        update = value
        for key in reversed(path):
            update = {key: update}
        _merge(resolved, update, "")
    resolved["name"], resolved["scale"] = name, scale
    check(resolved)
    return resolved


def check(recipe):
    """Raises a one-line `RecipeError` if the recipe's settings do not go together.

    Run by `resolve`, so a bad combination is refused before any data is
    generated or read.
    """
    task, model, train = recipe["task"], recipe["model"], recipe["train"]
    for section, key in (("task", "kind"), ("model", "cell")):
        if recipe[section][key] is None:
            raise RecipeError(
                f"Recipe {recipe['name']!r} does not set {section}.{key}."
            )
    _check_values(recipe)
    kind = task["kind"]
    try:
        zoo.get_cell_class(model["cell"])
        if kind == "recognition":
            languages.vocabulary_size(task["language"])
        if kind in ("dyck", "closing_bracket", "dyck_depth"):
            dyck_oracle.check_task_lengths(task)
        if kind == "language_model":
            corpora.check_corpus_name(task["corpus"])
            corpora.check_level(task["corpus"], task["level"])
    except ValueError as error:
        raise RecipeError(str(error)) from None
    if kind == "closing_bracket" and model["cell"] != "dyck_rnn":
        raise RecipeError(
            "task.kind 'closing_bracket' trains the Dyck-RNN; expected "
            f"model.cell='dyck_rnn', received {model['cell']!r}."
        )
    if model["bidirectional"] and kind not in LABELING_KINDS:
        raise RecipeError(
            "model.bidirectional reads each string right to left too, which only "
            f"a tagger or a classifier may; expected task.kind one of "
            f"{', '.join(LABELING_KINDS)}, received {kind!r}."
        )
    if model["pooling"] != "last" and kind not in CLASSIFIER_KINDS:
        raise RecipeError(
            "model.pooling chooses what a classifier reads of a sequence; "
            f"expected 'last' for task.kind {kind!r}, received "
            f"{model['pooling']!r}."
        )
    if train["stateful"] and train["distribute"] != "none":
        raise RecipeError(
            "train.stateful carries each row's state into the next batch, which a "
            "distribution strategy's batch split does not keep; expected "
            "train.stateful=false (stateless windows) with train.distribute="
            f"{train['distribute']!r}."
        )
    sampled = train["sampled_softmax"]
    if sampled and (kind != "language_model" or train["distribute"] != "none"):
        raise RecipeError(
            f"train.sampled_softmax={sampled} samples the output classes of a "
            "language model on one device; expected 0 (the full softmax) with "
            f"task.kind {kind!r} and train.distribute={train['distribute']!r}."
        )
    if train["curriculum"] and kind != "recognition":
        raise RecipeError(
            "train.curriculum feeds recognition strings by length; expected "
            f"task.kind 'recognition', received {kind!r}."
        )
    if train["stateful"] and kind != "language_model":
        raise RecipeError(
            f"train.stateful is for language models; expected false for task.kind "
            f"{kind!r}, received true."
        )
    reset_every = train["reset_every"]
    if reset_every is not None and not (train["stateful"] and reset_every >= 1):
        raise RecipeError(
            "train.reset_every zeroes a stateful model's state every N batches; "
            "expected an integer >= 1 with train.stateful=true, received "
            f"{reset_every!r} with train.stateful={str(train['stateful']).lower()}."
        )
    _check_step_groups(train)
    if task["train_cutoff"] is not None and (
        kind != "language_model" or task["train_cutoff"] < 1
    ):
        raise RecipeError(
            "task.train_cutoff cuts a language model's training lines; expected "
            "an integer >= 1 with task.kind 'language_model', received "
            f"{task['train_cutoff']!r} with {kind!r}."
        )
    if train["eval_temperature"] is not None and not (
        model["cell"] == "second_order_lstm" and train["eval_temperature"] > 0
    ):
        raise RecipeError(
            "train.eval_temperature sets the second-order LSTM's tau for "
            "evaluation; expected a number > 0 with model.cell "
            f"'second_order_lstm', received {train['eval_temperature']!r} with "
            f"{model['cell']!r}."
        )
    if train["reduce_lr_patience"] is not None and (
        train["final_learning_rate"] is not None
    ):
        raise RecipeError(
            "train.reduce_lr_patience and train.final_learning_rate both set; "
            "expected one learning-rate schedule."
        )


# The type of each key whose default is `None` ("not set"); every other key
# has its default's type. A float key takes an int too; a bool is never a
# number (`true` is not 1).
OPTIONAL_TYPES = {
    ("task", "kind"): str,
    ("task", "data_dir"): str,
    ("task", "train_cutoff"): int,
    ("task", "train_max_length"): int,
    ("task", "pairs_per_suite"): int,
    ("model", "cell"): str,
    ("model", "embedding_dim"): int,
    ("model", "output_dropout"): float,
    ("train", "final_learning_rate"): float,
    ("train", "clipvalue"): float,
    ("train", "reduce_lr_patience"): int,
    ("train", "temperature_factor"): float,
    ("train", "eval_temperature"): float,
    ("train", "stop_below_loss"): float,
    ("train", "reset_every"): int,
    ("train", "max_steps_per_epoch"): int,
}

Range = collections.namedtuple(
    "Range", ["low", "high", "low_open", "high_open"], defaults=[None, False, False]
)
Range.__doc__ = """The values a number may take: `low` and `high` (None: no bound),
each excluded when `low_open` / `high_open`."""

# The range of every number whose type does not say it (a `None` default is
# "not set", unchecked); size bounds catch mistakes only (docs/reliability.md).
RANGES = {
    ("task", "k"): Range(1, 1024),
    ("task", "m"): Range(1, 32),
    ("task", "train_sequences"): Range(1, 1_000_000),
    ("task", "dev_sequences"): Range(1, 1_000_000),
    ("task", "test_sequences"): Range(1, 1_000_000),
    ("task", "split_scale"): Range(0, 100, low_open=True),
    ("task", "sequence_length"): Range(1, 10_000),
    ("task", "pairs_per_suite"): Range(1),
    ("task", "split_seed"): Range(0, 2**32 - 1),
    ("model", "units"): Range(1, 8192),
    ("model", "num_layers"): Range(1, 64),
    ("model", "embedding_dim"): Range(1, 8192),
    ("model", "dropout"): Range(0, 1, high_open=True),
    ("model", "output_dropout"): Range(0, 1, high_open=True),
    ("train", "seed"): Range(0, 2**32 - 1),  # NumPy's seeds
    ("train", "epochs"): Range(1),
    ("train", "batch_size"): Range(1, 65_536),
    ("train", "learning_rate"): Range(0, low_open=True),
    ("train", "final_learning_rate"): Range(0, low_open=True),
    ("train", "clipnorm"): Range(0, low_open=True),
    ("train", "clipvalue"): Range(0, low_open=True),
    ("train", "early_stopping_patience"): Range(0),
    ("train", "reduce_lr_patience"): Range(0),
    ("train", "reduce_lr_factor"): Range(0, 1, low_open=True, high_open=True),
    ("train", "temperature_factor"): Range(0, 1, low_open=True),
    ("train", "temperature_min"): Range(0, low_open=True),
    ("train", "stop_below_loss"): Range(0, low_open=True),
    ("train", "max_steps_per_epoch"): Range(1),
    ("train", "sampled_softmax"): Range(0),
}


# The values a string key may take.
CHOICES = {
    ("task", "kind"): KINDS,
    ("task", "step_labels"): STEP_LABELS,
    ("task", "hard_negatives"): recognition_sets.HARD_NEGATIVES,
    ("task", "next_symbol_loss"): NEXT_SYMBOL_LOSSES,
    ("model", "pooling"): POOLINGS,
    ("train", "distribute"): DISTRIBUTE,
    ("train", "precision"): PRECISIONS,
}


def _check_type(name, value, expected, optional):
    if value is None and optional:
        return
    number = expected is float and type(value) is int  # an int is a float here
    if type(value) is not expected and not number:
        raise RecipeError(
            f"Recipe key {name!r} must be of type {expected.__name__}"
            f"{' or null' if optional else ''}; received {value!r}."
        )
    if type(value) is float and not math.isfinite(value):
        raise RecipeError(f"{name} must be a finite number; received {value!r}.")


def _check_jit_compile(value):
    if not (value == "auto" or isinstance(value, bool)):
        raise RecipeError(
            f'train.jit_compile must be "auto", true or false; received {value!r}.'
        )


def _check_steps_per_execution(value):
    if not (value == "auto" or (type(value) is int and value >= 1)):
        raise RecipeError(
            'train.steps_per_execution must be "auto" or an integer >= 1; '
            f"received {value!r}."
        )


# The keys whose values are a string or a number, each checked by its own.
MIXED_KEYS = {
    ("train", "jit_compile"): _check_jit_compile,
    ("train", "steps_per_execution"): _check_steps_per_execution,
}


def _check_step_groups(train):
    """Refuses `train.steps_per_execution=N` where groups of N steps cannot run."""
    steps = train["steps_per_execution"]
    if steps == "auto" or steps == 1:
        return
    if train["distribute"] != "none":
        raise RecipeError(
            f"train.steps_per_execution={steps} is not supported with "
            f'train.distribute={train["distribute"]!r}; expected "auto" or 1.'
        )
    # Keras runs whole groups on repeated data (an epoch would run more
    # steps), and zeroes the state between groups only.
    for key in ("max_steps_per_epoch", "reset_every"):
        if train[key] is not None and train[key] % steps:
            raise RecipeError(
                f"train.steps_per_execution={steps} runs the steps in groups of "
                f"{steps}, which must divide train.{key}={train[key]}; expected "
                'a divisor of it or "auto".'
            )


def _describe(range_):
    bounds = []
    if range_.low is not None:
        bounds.append(f"{'>' if range_.low_open else '>='} {range_.low}")
    if range_.high is not None:
        bounds.append(f"{'<' if range_.high_open else '<='} {range_.high}")
    return " and ".join(bounds)


def _check_values(recipe):
    """Every key of the schema of its type, every number finite and in range,
    every string one of its choices.

    The schema is `DEFAULTS` (a key's type is its default's, or
    `OPTIONAL_TYPES`'s where the default is `None`), `RANGES` and `CHOICES`;
    each error is one line naming the key.
    """
    for section, defaults in DEFAULTS.items():
        if not isinstance(defaults, dict):  # description, source
            _check_type(section, recipe[section], type(defaults), optional=False)
            continue
        for key, default in defaults.items():
            if (section, key) in MIXED_KEYS:  # "auto" or a bool or an int
                MIXED_KEYS[section, key](recipe[section][key])
                continue
            optional = default is None
            expected = OPTIONAL_TYPES[section, key] if optional else type(default)
            _check_type(f"{section}.{key}", recipe[section][key], expected, optional)
    for (section, key), range_ in RANGES.items():
        value = recipe[section][key]
        if value is None:
            continue
        low, high = range_.low, range_.high
        too_low = low is not None and (value <= low if range_.low_open else value < low)
        too_high = high is not None and (
            value >= high if range_.high_open else value > high
        )
        if too_low or too_high:
            raise RecipeError(
                f"{section}.{key} must be {_describe(range_)}; received {value!r}."
            )
    for (section, key), choices in CHOICES.items():
        value = recipe[section][key]
        if value not in choices:
            raise RecipeError(
                f"Unknown {section}.{key} {value!r}; expected one of: "
                f"{', '.join(choices)}."
            )
