"""What a stack recognizer does with its stack, step by step (Mali et al. 2020).

`trace` runs `zoo.trace_recognizer` on strings and keeps each string's own
steps; `pda_actions` gives the action a correct pushdown automaton takes on
each token read; `agreement` is the share of steps whose most likely action is
that one.

The correct automaton: for Dyck-n, push on an open bracket, pop on a close
bracket, no-op on START and END; for the palindromes `w c w^R`, push each
symbol before the centre `c`, no-op on `c`, pop each one after it (and no-op
on START and END). A stack with PUSH and POP only (no NO-OP, as Joulin &
Mikolov's StackRNN) cannot do a no-op: those steps are left out of its share
and counted apart.

`analyze_stack` runs it on run directories and writes the figures and
`stack.json` (`python -m training.analyze stack`, which prints
`report_lines`).
"""

import numpy as np
from keras import ops
from matplotlib import colors

import zoo
from training.analysis.run_inputs import (
    check_kind,
    check_split,
    encode_texts,
    run_label,
    run_names,
    token_names,
)
from training.core import plots
from training.data.dyck_strings import END_ID, FIRST_BRACKET_ID, START_ID
from training.runs import runs
from zoo.cells.stack_cell import StackCell
from zoo.checks import check_positive_int
from zoo.layers.differentiable_stack import NO_OP, POP, PUSH

ACTIONS = ("push", "pop", "no-op")


def check_stack_recognizer(model):
    """ValueError (one line) unless `model` is a recognizer on a stack cell."""
    try:
        parts = zoo.model_parts(model)
    except ValueError:
        parts = None
    cell = getattr(parts.recurrent[0], "cell", None) if parts else None
    if not isinstance(cell, StackCell) or parts.embedding is None:
        raise ValueError(
            "The stack analysis needs a recognizer on a stack cell (stack_rnn or "
            f"diffstk_*); this model ({model.name}) has none."
        )
    return cell


def trace(model, ids):
    """Actions and stack tops of a stack recognizer on id strings.

    Args:
        model: A `zoo.recognizer` on a stack cell.
        ids: A list of id sequences (START first), of any lengths.

    Returns:
        A list (one per string) of dicts of NumPy arrays: `"actions"`
        `(length, num_actions)` and `"stack_top"` `(length, stack_width)`.
    """
    check_stack_recognizer(model)
    if not len(ids) or not all(len(s) for s in ids):
        raise ValueError("Expected at least one non-empty string of ids.")
    padded = np.zeros((len(ids), max(len(s) for s in ids)), "int32")
    for row, string in enumerate(ids):
        padded[row, : len(string)] = string
    traced = zoo.trace_recognizer(model, padded)
    actions = ops.convert_to_numpy(traced["actions"])
    tops = ops.convert_to_numpy(traced["stack_top"])
    return [
        {"actions": actions[row, : len(s)], "stack_top": tops[row, : len(s)]}
        for row, s in enumerate(ids)
    ]


def pda_actions(ids, language):
    """The action of a correct pushdown automaton on each token of `ids`.

    Args:
        ids: One string's ids in `training.data.languages`'s layout.
        language: `"Dn"` (e.g. `"D2"`) or `"palindrome"`.
    """
    if language == "palindrome":
        centre = FIRST_BRACKET_ID + 2
        expected, seen_centre = [], False
        for token in ids:
            if token in (START_ID, END_ID) or token == centre:
                seen_centre = seen_centre or token == centre
                expected.append(NO_OP)
            else:
                expected.append(POP if seen_centre else PUSH)
        return np.array(expected, "int32")
    if not (language.startswith("D") and language[1:].isdigit()):
        raise ValueError(
            f"language must be 'Dn' (e.g. 'D2') or 'palindrome'; received {language!r}."
        )
    n = int(language[1:])
    ids = np.asarray(ids)
    opening = (ids >= FIRST_BRACKET_ID) & (ids < FIRST_BRACKET_ID + n)
    closing = ids >= FIRST_BRACKET_ID + n
    return np.where(opening, PUSH, np.where(closing, POP, NO_OP)).astype("int32")


def agreement(actions, expected):
    """Share of steps whose most likely action is the automaton's.

    Args:
        actions: `(steps, num_actions)` probabilities (PUSH, POP[, NO-OP]).
        expected: `(steps,)` the automaton's actions (`pda_actions`).

    Returns:
        A dict: `share` (None when no step counts), `steps` counted,
        `matching`, and `no_op_steps_left_out` (steps whose action is NO-OP
        when the stack has no NO-OP).
    """
    actions, expected = np.asarray(actions), np.asarray(expected)
    counted = expected < actions.shape[-1]
    matching = int((actions.argmax(axis=-1) == expected)[counted].sum())
    steps = int(counted.sum())
    return {
        "share": matching / steps if steps else None,
        "steps": steps,
        "matching": matching,
        "no_op_steps_left_out": int((~counted).sum()),
    }


def plot(tokens, traces, path, title="Stack actions per step"):
    """Action probabilities and stack top per step, a pair of panels per string."""
    fig, axes = plots.figure(
        title,
        height=1.2 + 2.0 * len(traces),
        rows=2 * len(traces),
        height_ratios=[3, 1] * len(traces),
    )
    image = None
    for index, traced in enumerate(traces):
        actions, top = traced["actions"], traced["stack_top"]
        ax, top_ax = axes[2 * index], axes[2 * index + 1]
        image = ax.imshow(
            actions.T, aspect="auto", cmap="Blues", vmin=0, vmax=1, interpolation="none"
        )
        best = actions.argmax(axis=-1)
        ax.plot(range(len(best)), best, "x", color="C3", label="most likely action")
        ax.set_yticks(range(actions.shape[1]))
        ax.set_yticklabels(ACTIONS[: actions.shape[1]])
        ax.set_ylabel(f"string {index + 1}\naction")
        ax.set_xticks([])
        top_ax.imshow(
            top.T,
            aspect="auto",
            cmap="coolwarm",
            norm=colors.CenteredNorm(),
            interpolation="none",
        )
        top_ax.set_yticks([])
        top_ax.set_ylabel("stack top")
    axes[-1].set_xlabel("token read (red and blue: stack top value, 0 white)")
    axes[0].legend(loc="upper right", fontsize=8)
    fig.colorbar(image, ax=axes, label="action probability", shrink=0.6)
    for string, top_ax in zip(tokens, axes[1::2], strict=True):
        plots.label_positions(top_ax, list(string))  # long strings thinned
    return plots.save(fig, path)


def analyze_stack(run_dirs, out, split, texts=(), samples=3):
    """Writes a figure per stack recognizer's run (`samples` strings of
    `split`, or `texts`) and `stack.json`; returns `{run name: result}`, each
    with its share of steps that agree with a correct automaton."""
    check_positive_int("--samples", samples)
    computed = []
    for run_dir, name in zip(run_dirs, run_names(run_dirs), strict=True):
        run = runs.load_run(run_dir)
        check_kind(run.recipe, ("recognition",), "stack", run_dir)
        check_stack_recognizer(run.model)
        check_split(run.task, split)
        language = run.task.language
        arrays = run.task.arrays[split]
        positives = [row[row != 0] for row in arrays.inputs[arrays.labels == 1]]
        shares = [
            agreement(t["actions"], pda_actions(s, language))
            for s, t in zip(positives, trace(run.model, positives), strict=True)
        ]
        matching = sum(s["matching"] for s in shares)
        counted = sum(s["steps"] for s in shares)
        shown = encode_texts(run.task, texts) if texts else positives[:samples]
        traced = trace(run.model, shown)
        result = {
            "split": split,
            "language": language,
            "positive_strings": len(positives),
            "pda_agreement": matching / counted if counted else None,
            "steps": counted,
            "no_op_steps_left_out": sum(s["no_op_steps_left_out"] for s in shares),
            "shown": [
                {
                    "tokens": token_names(run.vocabulary, s),
                    "actions": t["actions"].round(4).tolist(),
                    "stack_top": t["stack_top"].round(4).tolist(),
                }
                for s, t in zip(shown, traced, strict=True)
            ],
        }
        computed.append((name, run.recipe, result, traced))
    plots.make_out_dir(out)
    for name, recipe, result, traced in computed:
        plot(
            [shown["tokens"] for shown in result["shown"]],
            traced,
            out / plots.file_name(f"stack-{name}", ".png"),
            title=f"Stack actions: {run_label(name, recipe)}",
        )
    results = {name: result for name, _, result, _ in computed}
    runs.write_json(out / "stack.json", results)
    return results


def report_lines(results, split):
    """What `python -m training.analyze stack` prints: per run, the share of
    steps on which the most likely action is a correct automaton's."""
    lines = []
    for name, result in results.items():
        share = result["pda_agreement"]
        share = "no" if share is None else f"{share:.4f} of"
        lines.append(
            f"{name}: most likely action = a correct PDA's on {share} "
            f"{result['steps']} steps of positive {split} strings"
        )
    return lines
