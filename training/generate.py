"""Samples text from a trained language model, one step at a time.

    python -m training.generate RUN_DIR --prompt TEXT --length N
        [--temperature T] [--top-k K] [--seed S] [--on-unknown error|unk]

The prompt is natural text, written in the conventions of the run's
vocabulary (`zoo.text_conventions`: PTB's characters read "the company
said" as `t h e _ c o m p a n y _ s a i d`). The model reads it and samples
after it in one compiled program (`zoo.sampler`: the recurrent state is
stepped, never the prefix re-run, and the whole loop is one XLA while loop),
and the text is printed once sampled, read back from the tokens
(`zoo.tokenizer.Tokenizer.pieces`: PTB's `_` a space, `<eos>` a newline).
A prompt with a token the vocabulary lacks is refused in one line naming
it, unless `--on-unknown unk` reads it as `<unk>`. The library function
behind it is `training.runs.generation.sample`; `--length` is bounded by
`zoo.sampler.MAX_LENGTH` tokens. A seed gives the same text on every
run on one backend (not the text of the Python loop before issue 59).
"""

import sys

from training.cli import command_line

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
        from training.runs import generation

        pieces = generation.sample(
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
    print(first + "".join(pieces))
    return 0


if __name__ == "__main__":
    sys.exit(command_line.run(main))
