"""Which settings let a stack recognizer learn D2: a research script.

Not part of the library; the README's "Recognising Dyck languages" table
comes from it. Trains `zoo.recognizer` on Mali et al.'s D2 splits with
Keras's `fit` (Adam, gradients clipped at 15 by value, prefix targets for
`accept`) and prints after every epoch the losses, the validation split's
final-step, strict accept-only and strict accuracy, and what the controller
does on 200 valid positives: the share of steps whose most likely action is
the automaton's, PUSH on opening brackets, POP on closing ones. Example:

    PYTHONPATH=. python docs/experiments/stack_d2.py --epochs 5 \\
        --width 5 --read-depth 1 --learning-rate 1e-2 --batch-size 32 \\
        --next-symbol-loss positives
"""

import argparse
import time

import keras
import numpy as np
import tensorflow as tf

import zoo
from training import metrics
from training.analysis import stack
from training.data import recognition
from training.data.dyck import FIRST_BRACKET_ID


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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


def accuracies(model, arrays):
    """Final-step, strict accept-only and strict accuracy of one split."""
    outputs = model.predict(arrays.inputs, batch_size=256, verbose=0)
    accept = outputs["accept"][..., 0]
    final = metrics.recognition_accuracy(accept, arrays.labels, arrays.lengths)
    accept_only = metrics.strict_recognition_accuracy(
        accept, arrays.prefix_labels, arrays.lengths
    )
    strict = metrics.strict_recognition_accuracy(
        accept,
        arrays.prefix_labels,
        arrays.lengths,
        labels=arrays.labels,
        next_symbol=outputs["next_symbol"],
        legal_next=arrays.legal_next,
    )
    return [round(a.overall, 3) for a in (final, accept_only, strict)]


def actions(model, arrays, strings=200):
    """Automaton agreement, PUSH on opening and POP on closing brackets."""
    rows = np.flatnonzero(arrays.labels == 1)[:strings]
    ids = [arrays.inputs[row, : arrays.lengths[row] + 1] for row in rows]
    counts = np.zeros(6)
    for string, traced in zip(ids, stack.trace(model, ids), strict=True):
        best = traced["actions"].argmax(axis=-1)
        agree = stack.agreement(traced["actions"], stack.pda_actions(string, "D2"))
        opening = (string >= FIRST_BRACKET_ID) & (string < FIRST_BRACKET_ID + 2)
        closing = string >= FIRST_BRACKET_ID + 2
        counts += [
            agree["matching"],
            agree["steps"],
            (best[opening] == stack.PUSH).sum(),
            opening.sum(),
            (best[closing] == stack.POP).sum(),
            closing.sum(),
        ]
    return [round(float(counts[i] / counts[i + 1]), 3) for i in (0, 2, 4)]


def main():
    args = arguments()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.utils.set_random_seed(args.seed)
    splits = recognition.mali_splits("D2", seed=args.seed, scale=args.scale)
    arrays = {name: recognition.frame(split, "D2") for name, split in splits.items()}
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
        recognition.vocabulary_size("D2"),
        args.units,
        embedding_dim=args.units,
        **options,
    )
    model.compile(
        keras.optimizers.Adam(args.learning_rate, clipvalue=15.0),
        **zoo.hybrid_recognition_loss(),
    )
    train = arrays["train"]
    next_weights = train.mask
    if args.next_symbol_loss == "positives":
        next_weights = train.mask * train.labels[:, None]
    start = time.time()
    for epoch in range(args.epochs):
        history = model.fit(
            train.inputs,
            {"next_symbol": train.targets, "accept": train.prefix_labels[..., None]},
            sample_weight={"next_symbol": next_weights, "accept": train.mask},
            batch_size=args.batch_size,
            epochs=1,
            verbose=0,
        )
        losses = {k: round(v[-1], 4) for k, v in history.history.items()}
        traced = actions(model, arrays["valid"]) if options else []
        print(
            f"epoch {epoch} {losses} valid final/strict-accept/strict "
            f"{accuracies(model, arrays['valid'])} agreement/push-on-open/"
            f"pop-on-close {traced} {time.time() - start:.0f} s",
            flush=True,
        )
    for name in ("train", "test", "test_mixed"):
        print(name, "final/strict-accept/strict", accuracies(model, arrays[name]))


if __name__ == "__main__":
    main()
