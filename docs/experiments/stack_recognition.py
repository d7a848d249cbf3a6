"""Which settings let a stack recognizer learn D2 or palindromes: a research script.

Not part of the library; the tables of docs/stack-training.md ("Recognising
Dyck languages", "Palindromes") come from it. Trains `zoo.recognizer` on Mali
et al.'s splits of `--language` (D2 or palindrome) with Keras's `fit` (Adam,
gradients clipped at 15 by value; `--step-labels` sets the `accept` targets)
and prints after every epoch the losses, the validation split's final-step,
strict accept-only and strict accuracy, and what the controller does on 200
valid positives. On D2: the share of steps whose most likely action is the
automaton's, PUSH on opening brackets, POP on closing ones. On palindromes
w c w^R: the most likely action's shares (push, pop, no-op) on the symbols
of w, on c and on the symbols after c, and the mirror reading of the
`next_symbol` output alone: the share of steps after c whose arg-max next
symbol is the mirrored one (chance 0.5), the same at the first four such
steps, and the share of positive strings with a legal arg-max next symbol
at every step. Examples:

    PYTHONPATH=. python docs/experiments/stack_recognition.py --epochs 5 \\
        --width 5 --read-depth 1 --learning-rate 1e-2 --batch-size 32 \\
        --next-symbol-loss positives
    PYTHONPATH=. python docs/experiments/stack_recognition.py --language palindrome \\
        --epochs 30 --width 5 --read-depth 1 --next-symbol-loss positives --no-op off
"""

import argparse
import time

import keras
import numpy as np
import tensorflow as tf

import zoo
from training.analysis import stack_actions
from training.data import languages
from training.data.dyck_strings import FIRST_BRACKET_ID
from training.tasks import make_task, recipes

RECIPES = {
    "D2": "recognition_d2_diffstk_rnn_paper",
    "palindrome": "recognition_palindrome_diffstk_rnn_paper",
}
MARKER = languages.PALINDROME_MARKER


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--language", choices=tuple(RECIPES), default="D2")
    parser.add_argument("--step-labels", choices=("prefix", "string"), default="prefix")
    parser.add_argument("--cell", default="diffstk_rnn")
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--width", type=int, default=1, help="stack_width")
    parser.add_argument("--read-depth", type=int, default=3)
    parser.add_argument("--no-op", choices=("on", "off"), default="on")
    parser.add_argument("--carry-forward", choices=("soft", "hard", "off"))
    parser.add_argument("--noise", type=float, default=0.0, help="noise_stddev")
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--scale", type=float, default=1.0, help="split_scale")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--next-symbol-loss", choices=("all", "positives"), default="all"
    )
    return parser.parse_args()


def accuracies(model, task, split):
    """Final-step, strict accept-only and strict accuracy of one split."""
    scores = task.evaluate(model, split)
    return [round(scores[key], 3) for key in ("accuracy", "strict_accept", "strict")]


def palindrome_readings(model, arrays, strings=200):
    """Actions before, at and after c, and the mirror reading of next_symbol."""
    rows = np.flatnonzero(arrays.labels == 1)[:strings]
    best = model.predict(arrays.inputs[rows], verbose=0)["next_symbol"].argmax(-1)
    mirror, offsets, every = [], np.zeros((2, 4)), 0
    for row, guesses in zip(rows, best, strict=True):
        length = arrays.lengths[row]
        legal = arrays.legal_next[row, np.arange(length + 1), guesses[: length + 1]]
        every += legal.all()
        centre = int(np.flatnonzero(arrays.inputs[row] == MARKER)[0])
        after = legal[centre:length]  # the guesses of the mirrored symbols
        mirror.extend(after)
        offsets[:, : min(4, len(after))] += [after[:4], np.ones(min(4, len(after)))]
    shares = np.zeros((3, 3))  # w's symbols, c, the symbols after c x push/pop/no-op
    ids = [arrays.inputs[row, : arrays.lengths[row] + 1] for row in rows]
    for string, traced in zip(ids, stack_actions.trace(model, ids), strict=True):
        centre = int(np.flatnonzero(string == MARKER)[0])
        for step, action in enumerate(traced["actions"].argmax(axis=-1)[1:], start=1):
            shares[np.sign(step - centre) + 1, action] += 1
    return {
        "actions w|c|after (push, pop, no-op)": np.round(
            shares / shares.sum(axis=1, keepdims=True), 2
        ).tolist(),
        "mirror": round(float(np.mean(mirror)), 3),
        "mirror steps 1-4": np.round(
            offsets[0] / np.maximum(offsets[1], 1), 2
        ).tolist(),
        "next symbol legal at every step": round(float(every) / len(rows), 3),
    }


def actions(model, arrays, strings=200):
    """Automaton agreement, PUSH on opening and POP on closing brackets."""
    rows = np.flatnonzero(arrays.labels == 1)[:strings]
    ids = [arrays.inputs[row, : arrays.lengths[row] + 1] for row in rows]
    counts = np.zeros(6)
    for string, traced in zip(ids, stack_actions.trace(model, ids), strict=True):
        best = traced["actions"].argmax(axis=-1)
        agree = stack_actions.agreement(
            traced["actions"], stack_actions.pda_actions(string, "D2")
        )
        opening = (string >= FIRST_BRACKET_ID) & (string < FIRST_BRACKET_ID + 2)
        closing = string >= FIRST_BRACKET_ID + 2
        counts += [
            agree["matching"],
            agree["steps"],
            (best[opening] == stack_actions.PUSH).sum(),
            opening.sum(),
            (best[closing] == stack_actions.POP).sum(),
            closing.sum(),
        ]
    return [round(float(counts[i] / counts[i + 1]), 3) for i in (0, 2, 4)]


def main():
    args = arguments()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.utils.set_random_seed(args.seed)
    # The recipe's data: Mali et al.'s splits with swap negatives.
    overrides = [f"task.split_scale={args.scale}", f"train.seed={args.seed}"]
    task = make_task(recipes.resolve(RECIPES[args.language], "paper", overrides))
    arrays = task.arrays
    options = {}
    if args.cell.startswith(("diffstk", "stack")):
        options = {
            "stack_depth": 64,
            "stack_width": args.width,
            "read_depth": args.read_depth,
            "use_noop": args.no_op == "on",
        }
    if args.cell.startswith("diffstk"):
        carry = args.carry_forward or ("soft" if args.no_op == "on" else "off")
        options["carry_forward"] = False if carry == "off" else carry
        options["noise_stddev"] = args.noise
    model = zoo.recognizer(
        args.cell,
        languages.vocabulary_size(args.language),
        args.units,
        embedding_dim=args.units,
        **options,
    )
    model.compile(
        keras.optimizers.Adam(args.learning_rate, clipvalue=15.0),
        **zoo.hybrid_recognition_loss(),
    )
    train = arrays["train"]
    accept = train.prefix_labels
    if args.step_labels == "string":  # the string's label at every step
        accept = np.broadcast_to(train.labels[:, None], train.mask.shape)
    next_weights = train.mask
    if args.next_symbol_loss == "positives":
        next_weights = train.mask * train.labels[:, None]
    start = time.time()
    for epoch in range(args.epochs):
        history = model.fit(
            train.inputs,
            {"next_symbol": train.targets, "accept": accept[..., None]},
            sample_weight={"next_symbol": next_weights, "accept": train.mask},
            batch_size=args.batch_size,
            epochs=1,
            verbose=0,
        )
        losses = {k: round(v[-1], 4) for k, v in history.history.items()}
        if args.language == "palindrome":
            traced = palindrome_readings(model, arrays["valid"]) if options else {}
        else:
            traced = actions(model, arrays["valid"]) if options else []
            traced = f"agreement/push-on-open/pop-on-close {traced}"
        print(
            f"epoch {epoch} {losses} valid final/strict-accept/strict "
            f"{accuracies(model, task, 'valid')} {traced} {time.time() - start:.0f} s",
            flush=True,
        )
    for name in ("train", "test", "test_mixed"):
        print(name, "final/strict-accept/strict", accuracies(model, task, name))
    if args.language == "palindrome" and options:
        print("test", palindrome_readings(model, arrays["test"], strings=1500))


if __name__ == "__main__":
    main()
