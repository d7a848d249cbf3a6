"""Sampling text from a trained language model's run, one token at a time.

The work of `python -m training.generate`: the prompt, natural text in the
conventions of the run's vocabulary, is read once; each new token is then fed
alone to a stateful copy of the model, so the recurrent state is stepped
rather than the prefix re-run, and read back as text
(`zoo.tokenizer.Tokenizer.pieces`) as it is sampled.
"""

import numpy as np

import zoo
from training.runs import runs
from zoo.checks import check_number

# The most tokens one command samples: only a mistake asks for more.
MAX_LENGTH = 1_000_000


def sample_next(logits, temperature, top_k, rng, never=()):
    """Draws one id from `logits` at `temperature`, among the `top_k` best.

    The ids in `never` are never drawn (a Dyck model's padding and START).
    """
    logits = np.asarray(logits, np.float64) / temperature
    if len(never):
        logits[list(never)] = -np.inf
    if top_k is not None and top_k < len(logits):
        cutoff = np.sort(logits)[-top_k]
        logits = np.where(logits >= cutoff, logits, -np.inf)
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()
    return int(rng.choice(len(probabilities), p=probabilities))


def _check(length, temperature, top_k, seed):
    if length < 0:
        raise ValueError(f"`length` must be >= 0; received {length!r}.")
    if length > MAX_LENGTH:
        raise ValueError(
            f"`length` must be <= {MAX_LENGTH:,} tokens (more can only be a "
            f"mistake); received {length:,}."
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"`seed` must be an integer >= 0; received {seed!r}.")
    check_number("temperature", temperature, low=0, low_open=True)
    if top_k is not None and top_k < 1:
        raise ValueError(f"`top_k` must be >= 1; received {top_k!r}.")


def sample(
    run_dir, prompt, length, temperature=1.0, top_k=None, seed=0, on_unknown="error"
):
    """Yields the text of `generate`, piece by piece, as it is sampled.

    The first piece is `prompt` (yielded once the arguments are checked, the
    run is loaded and the prompt tokenized, so a refused call yields
    nothing); each next piece is one sampled token's text.
    """
    _check(length, temperature, top_k, seed)
    run = runs.load_run(run_dir)
    task = run.task
    if not isinstance(run.model, zoo.LanguageModel):
        raise ValueError(
            f"Run {str(run_dir)!r} trains a {type(run.model).__name__}, which does "
            "not predict tokens; expected a language model's run (task.kind "
            "'language_model' or 'dyck')."
        )
    tokenizer = task.tokenizer()
    ids = tokenizer(prompt, on_unknown=on_unknown)
    context = ([task.start_id] if task.start_id is not None else []) + ids
    if not context:
        raise ValueError("`prompt` is empty and the task has no start token.")
    model = task.build_model(stateful=True, batch_size=1)
    model.set_weights(run.model.get_weights())
    zoo.reset_states(model)
    rng = np.random.default_rng(seed)
    logits = model(np.asarray([context], np.int32), training=False)[0, -1]
    yield prompt

    def sampled():
        nonlocal logits
        for _ in range(length):
            token = sample_next(logits, temperature, top_k, rng, task.never_generated)
            yield token
            if token == task.end_id:  # the string is over
                return
            logits = model(np.asarray([[token]], np.int32), training=False)[0, -1]

    yield from tokenizer.pieces(sampled(), continuing=bool(ids))


def generate(
    run_dir, prompt, length, temperature=1.0, top_k=None, seed=0, on_unknown="error"
):
    """Returns `prompt` followed by up to `length` sampled tokens, as text.

    Sampling stops early at the task's end token (`task.end_id`, Dyck's END)
    and never draws the task's `never_generated` ids (a Dyck model's padding
    and START). A run whose model does not predict tokens, a prompt with a
    token the vocabulary lacks (unless `on_unknown="unk"`), or `length` over
    `MAX_LENGTH`, is a `ValueError`.
    """
    pieces = sample(run_dir, prompt, length, temperature, top_k, seed, on_unknown)
    return "".join(pieces)
