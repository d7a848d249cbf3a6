"""Hand-built stack recognizers scored on the zoo's splits: a research script.

Not part of the library; the table "What hand-built weights show" of
docs/stack-training.md comes from it. For each language (palindrome, D2)
and cell (DiffStk-RNN, StackRNN) it builds the recipe's recognizer
(`recognition_palindrome_diffstk_rnn_paper` or `recognition_d2_diffstk_rnn_paper` at
the paper's scale, `model.cell` set; 8 units, stack elements of 5 entries,
one read, depth 64), writes the automaton of
`training.analysis.hand_built_stack` into it and prints the task's own
metrics (`RecognitionTask.evaluate`) on every split of data seed 0. Usage:

    PYTHONPATH=. python docs/experiments/hand_built_stack.py [--seed 0] \\
        [--split-scale 1.0] [--stack-depth 64] [--languages palindrome,D2]
"""

import argparse

from training.analysis.hand_built_stack import set_hand_built_weights
from training.tasks import make_task, recipes

RECIPES = {
    "palindrome": "recognition_palindrome_diffstk_rnn_paper",
    "D2": "recognition_d2_diffstk_rnn_paper",
}
CELLS = ("diffstk_rnn", "stack_rnn")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split-scale", type=float, default=1.0)
    parser.add_argument("--stack-depth", type=int, default=64)
    parser.add_argument("--languages", default="palindrome,D2")
    args = parser.parse_args()
    print(
        "| language | cell | split | strict | strict on positives | "
        "next symbol legal on positives | final step | strings |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for language in args.languages.split(","):
        task = None
        for cell in CELLS:
            recipe = recipes.resolve(
                RECIPES[language],
                "paper",
                [
                    f"model.cell={cell}",
                    f"model.options.stack_depth={args.stack_depth}",
                    f"train.seed={args.seed}",
                    f"task.split_scale={args.split_scale}",
                ],
            )
            task = make_task(recipe) if task is None else task.with_recipe(recipe)
            model = set_hand_built_weights(task.build_model(), language)
            for split in task.splits:
                found = task.evaluate(model, split)
                print(
                    f"| {language} | {cell} | {split} | {100 * found['strict']:.2f} | "
                    f"{100 * found['strict_positives']:.2f} | "
                    f"{100 * found['next_symbol_positives']:.2f} | "
                    f"{100 * found['accuracy']:.2f} | {found['strings']} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
