"""Samples text from a trained language model, one step at a time.

    python -m training.generate RUN_DIR --prompt TEXT --length N
        [--temperature T] [--top-k K] [--seed S] [--on-unknown error|unk]

The prompt is natural text, written in the conventions of the run's
vocabulary (`zoo.text_conventions`: PTB's characters read "the company
said" as `t h e _ c o m p a n y _ s a i d`) and read once; each new token
is then fed alone to a stateful copy of the model, so the recurrent state is
stepped rather than the prefix re-run. The text is printed as it is
sampled, read back from the tokens (`zoo.tokenizer.Tokenizer.pieces`: PTB's
`_` a space, `<eos>` a newline); `--length` is at most `MAX_LENGTH` tokens.
A prompt with a token the vocabulary lacks is refused in one line naming it,
unless `--on-unknown unk` reads it as `<unk>`.
"""

import sys

import numpy as np

from training import command_line

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
    from zoo.checks import check_number

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
    import zoo
    from training import runs

    _check(length, temperature, top_k, seed)
    run = runs.load_run(run_dir)
    task = run.task
    if task.head != "language_model":
        raise ValueError(
            f"Run {str(run_dir)!r} trains a {task.head} model, which does not "
            "predict tokens; expected a language model's run (task.kind "
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


EXAMPLES = (
    (
        "python -m training.generate runs/ptb_char_lstm-small --prompt 'the '",
        "100 characters after the prompt, at temperature 1",
    ),
    (
        "python -m training.generate preset:lstm_dyck_m4 --prompt '(a' --length 20 "
        "--top-k 2 --seed 3",
        "a built-in preset's brackets, from its two likeliest at each step",
    ),
)


def main(argv=None):
    parser = command_line.parser("python -m training.generate", __doc__, EXAMPLES)
    parser.add_argument("run_dir", help="a language model's run, preset:NAME or PATH")
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--length", type=int, default=100)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-k", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--on-unknown",
        choices=("error", "unk"),
        default="error",
        help="a prompt token the vocabulary lacks: refused, or read as <unk>",
    )
    args = parser.parse_args(argv)
    try:
        command_line.start_tensorflow()
        pieces = sample(
            args.run_dir,
            args.prompt,
            args.length,
            args.temperature,
            args.top_k,
            args.seed,
            args.on_unknown,
        )
        first = next(pieces)  # the checks and the loading
    except KeyboardInterrupt:
        parser.exit(130, f"{parser.prog}: interrupted\n")
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(first, end="", flush=True)
    try:
        for piece in pieces:  # printed as sampled
            print(piece, end="", flush=True)
    except KeyboardInterrupt:
        parser.exit(130, f"\n{parser.prog}: interrupted\n")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
