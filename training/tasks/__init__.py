"""The kinds of experiment: each task knows its data, model, loss and evaluation.

`make_task(recipe, vocabulary=None)` returns the task of `recipe.task.kind`.
`TASKS` is the registry of the kinds: each task class names its `task`
section's class (`options`, a frozen dataclass with its `kind`, its
builder's `model_arguments` and its own checks), and `training.tasks.recipes`
reads recipes of exactly these kinds:

- `DyckTask` (`"dyck"`): next-token prediction on m-bounded Dyck-k (START
  prepended, END predicted) by a language model, evaluated with WCPA/LDPA and
  cross-entropy.
- `ClosingBracketTask` (`"closing_bracket"`): the Dyck-RNN's task on the same
  data, the closing bracket's type at every position where the next token
  closes, evaluated with WCPA/LDPA.
- `RecognitionTask` (`"recognition"`): Dyck-n or palindrome recognition
  (Mali et al. 2020) with the hybrid loss, evaluated with accuracy overall
  and per length bin.
- `LanguageModelTask` (`"language_model"`): a text corpus, stateful truncated
  BPTT (or epoch-shuffled windows), evaluated with cross-entropy, perplexity
  and bits per token over the whole split with the state carried through.
- `DyckDepthTask` (`"dyck_depth"`): sequence tagging, the stack depth after
  every bracket of a Dyck-(k, m) string, by a (bidirectional) tagger,
  evaluated with token accuracy per depth and per length.
- `AcceptabilityTask` (`"acceptability"`): text classification, BLiMP's
  sentences as acceptable or not with whole suites held out, by a
  (bidirectional) classifier, evaluated with sentence and pair accuracy per
  phenomenon and per suite.

Making a task reads no data: the vocabulary (the given one, e.g. a run's
`vocabulary.json`, or the task's own), the start id and the model follow from
the recipe. Data are generated or read the first time `train_data`,
`validation_data` or `evaluate` needs them (a language model or the
acceptability task without a given vocabulary reads its training split to
build one). The training dataset and its callbacks are made once per task,
on the first `train_data()` (each kind's `make_train_data`), and shared by
everything that asks for them in a run (`fit`, `compile_mode`,
`train_shape`); a `with_recipe` clone makes its own.

Every task has `recipe`, `vocabulary`, `vocab_size`, `start_id` (the id a
text is read after, or None), `end_id` and `never_generated` (the id that
ends a sampled text, or None, and the ids one never holds), `conventions`
(what natural text is written in before its tokens are looked up,
`zoo.text_conventions`, as its own vocabulary records them), `tokenizer()`
(`zoo.tokenizer.Tokenizer`), `monitor`, `search_objective`,
`splits` and the methods `build_model(stateful=False, batch_size=None)`,
`compile_arguments()`, `train_data()` (the dataset and the callbacks it
needs), `validation_data()`, `evaluate(model, split)`,
`report(metrics, split)`, `search_callbacks()` and `with_recipe(recipe)`.

What `training.core.fitting.fit` and `training.core.compile_mode` use of a task is a
declared type on their floor, `training.core.task_protocol.TrainableTask`:
`recipe`, `monitor`, `training_model(model)`, `compile_arguments()`,
`train_data()`, `train_shape()`, `epoch_steps()`, `validation_data()` and
`validation_callbacks()`. Every kind here satisfies it by its shape
(`tests/training/core/task_protocol_test.py`); the fit path imports no task.
"""

from training.tasks.acceptability import AcceptabilityTask
from training.tasks.closing_bracket import ClosingBracketTask
from training.tasks.dyck import DyckTask
from training.tasks.dyck_depth import DyckDepthTask
from training.tasks.language_model import LanguageModelTask
from training.tasks.recognition import RecognitionTask

TASKS = {
    task.options.kind: task
    for task in (
        DyckTask,
        ClosingBracketTask,
        RecognitionTask,
        LanguageModelTask,
        DyckDepthTask,
        AcceptabilityTask,
    )
}


def make_task(recipe, vocabulary=None):
    """Returns the task of a resolved recipe; reads no data.

    Args:
        recipe: A recipe from `training.tasks.recipes.resolve` (its kind is checked
            there).
        vocabulary: The vocabulary to use (a run's `vocabulary.json`);
            default: the task's own, which for a language model means reading
            its corpus's training split.
    """
    return TASKS[recipe.task.kind](recipe, vocabulary)
