"""Sampling text from a trained language model's run, in one compiled loop.

The work of `python -m training.generate`: the prompt, natural text in the
conventions of the run's vocabulary, is tokenized, and the model samples
after it with the zoo's compiled sampler (`zoo.sampler.generate`: the
prompt read, each token drawn and the recurrent state carried inside one
XLA while loop, or `jax.lax.while_loop` on JAX); the tokens are then read
back as text (`zoo.tokenizer.Tokenizer.pieces`).
"""

import zoo.sampler
from training.runs import runs


def _check(length, temperature, top_k, seed):
    if isinstance(length, bool) or not isinstance(length, int):
        raise ValueError(f"`length` must be an integer; received {length!r}.")
    if not 0 <= length <= zoo.sampler.MAX_LENGTH:
        raise ValueError(
            f"`length` must be in [0, {zoo.sampler.MAX_LENGTH:,}] tokens; received "
            f"{length:,}."
        )
    # 0 asks for the prompt alone; the sampler's checks hold for the rest.
    zoo.sampler.check_options(max(length, 1), temperature, top_k, seed)


def sample(
    run_dir, prompt, length, temperature=1.0, top_k=None, seed=0, on_unknown="error"
):
    """Yields the text of `generate`, piece by piece.

    The first piece is `prompt` (yielded once the arguments are checked, the
    run is loaded, the prompt tokenized and the tokens sampled, so a refused
    call yields nothing); each next piece is one sampled token's text.
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
    tokens = []
    if length:
        generated = zoo.sampler.generate(
            run.model,
            [context],
            length,
            temperature=temperature,
            top_k=top_k,
            seed=seed,
            stop_ids=[] if task.end_id is None else [task.end_id],
            never_ids=list(task.never_generated),
        )
        tokens = generated.ids[0, : generated.lengths[0]].tolist()
    yield prompt
    yield from tokenizer.pieces(tokens, continuing=bool(ids))


def generate(
    run_dir, prompt, length, temperature=1.0, top_k=None, seed=0, on_unknown="error"
):
    """Returns `prompt` followed by up to `length` sampled tokens, as text.

    Sampling stops early at the task's end token (`task.end_id`, Dyck's END)
    and never draws the task's `never_generated` ids (a Dyck model's padding
    and START). A run whose model does not predict tokens, a prompt with a
    token the vocabulary lacks (unless `on_unknown="unk"`), or `length` over
    `zoo.sampler.MAX_LENGTH`, is a `ValueError`.
    """
    pieces = sample(run_dir, prompt, length, temperature, top_k, seed, on_unknown)
    return "".join(pieces)
