"""Looks inside trained runs: writes a figure (PNG) and its numbers (JSON/CSV).

    python -m training.analyze WHAT RUN_DIR [RUN_DIR ...] --out DIR [--split test]

WHAT is one of:
    surprisal  loss on and 1..4 steps after the 10% most surprising tokens
               (Krause et al. 2016, 4.2), one line per language-model run;
               for two runs, the first's advantage after surprises against
               its advantage overall, with a bootstrap interval
    pabs       principal angles between the transition matrices of
               second-order LSTM, mmRNN and mmLSTM runs; --init: also of
               each run at initialization (dashed), the baseline;
               --across RUN_A RUN_B [RUN ...]: between corresponding
               matrices of each pair of runs of one architecture (LSTMs
               too: two trained from two seeds), with --init also between
               their initial models
    routing    which cell (second-order LSTM) or choice matrix (mmRNN,
               mmLSTM) each token used, and the mean weight per token type
    stack      push/pop/no-op per step of a stack recognizer, and the share
               of steps that match a correct pushdown automaton
    ldpa       accuracy against closing distance of Dyck runs
    curves     a column of the per-epoch log (--column, default val_wcpa)
               against the epoch, of runs or of records in results/
               (Figure 3 of the second-order report); reads no model
"""

import itertools
import sys
from pathlib import Path

import numpy as np

from training import command_line
from training.analysis.loading import (
    check_kind,
    check_split,
    encode_texts,
    sample_ids,
    stream_ids,
    token_names,
)

ANALYSES = ("surprisal", "pabs", "routing", "stack", "ldpa", "curves")
INIT = "@init"  # pabs --init: the key of a run's angles at initialization


def run_names(run_dirs):
    """Short names that tell the runs apart, for labels and file names.

    The folder's name, with as many parent folders as it takes to make the
    names differ (`lstm_m4-seed-0`, `lstm_m6-seed-0` for the runner's
    `OUT/runs/ROW/seed-N`), so no run's picture or numbers replace another's;
    they differ as file names too (`plots.file_name`, `preset:NAME`).
    """
    from training import plots

    parts = [Path(d).resolve().parts for d in run_dirs]
    if len(set(parts)) < len(parts):
        raise ValueError("a run directory is given twice; expected each once.")
    depth = 1
    while len({plots.file_name("-".join(p[-depth:])) for p in parts}) < len(parts):
        if depth == max(map(len, parts)):
            raise ValueError(
                "two run directories' paths differ only in characters a file "
                "name cannot hold (such as ':'); expected names that differ in "
                "letters, digits, '_', '.' or '-'."
            )
        depth += 1
    return ["-".join(p[-depth:]) for p in parts]


def run_label(name, recipe):
    return f"{recipe['model']['cell']} ({name})"


def analyze_surprisal(run_dirs, out, split, fraction=0.1, steps=4):
    from training import plots, runs, scoring
    from training.analysis import surprisal
    from zoo.checks import check_number

    check_number("--fraction", fraction, 0, 1, low_open=True)
    loaded = [runs.load_run(d) for d in run_dirs]
    for run_dir, run in zip(run_dirs, loaded, strict=True):
        check_kind(run.recipe, ("language_model",), "surprisal", run_dir)
    if any(run.vocabulary != loaded[0].vocabulary for run in loaded[1:]):
        raise ValueError(
            "surprisal compares runs on the same tokens; expected runs with the "
            "same vocabulary."
        )
    ids = stream_ids(loaded[0].task, split)
    losses = np.stack(
        [scoring.token_losses(r.task.build_model, r.model, ids) for r in loaded]
    )
    result = surprisal.in_bits(surprisal.recovery(losses, fraction, steps))
    if len(loaded) == 2:
        result["advantage"] = surprisal.advantage_in_bits(
            surprisal.advantage(losses, fraction, steps)
        )
    labels = [
        run_label(name, run.recipe)
        for name, run in zip(run_names(run_dirs), loaded, strict=True)
    ]
    result.update({"runs": labels, "unit": "bits", "split": split})
    level = loaded[0].recipe["task"]["level"]  # PTB characters are read as words
    unit = "bits/char" if level == "char" else f"bits/{level}"
    plots.make_out_dir(out)
    surprisal.plot(result, labels, out / "surprisal.png", unit=unit)
    runs.write_json(out / "surprisal.json", result)
    return result


def advantage_line(labels, advantage):
    """One line: the first run's advantage after surprises against overall."""
    steps = len(advantage["after"]) - 1
    low, high = advantage["excess_interval"]
    return (
        f"{labels[0]} over {labels[1]}: {advantage['overall']:.4f} bits overall, "
        f"{advantage['excess']:+.4f} more at 1..{steps} steps after a surprising "
        f"input ({advantage['level']:.0%} interval {low:+.4f} to {high:+.4f}): "
        f"{advantage['verdict']}"
    )


def analyze_pabs(run_dirs, out, init=False, across=False):
    """Writes PABS pictures, `pabs.json` and `pabs-summary.csv`; returns the sets.

    Each set of angles (`pabs.pairwise_angles`' or `pabs.cross_angles`'
    results) has a key in `pabs.json`: `NAME`, the pairs within each run
    (`pabs-NAME.png`); with `across`, `A / B`, the corresponding matrices
    of each pair of runs (`pabs-A-vs-B.png`). With `init` the same is
    computed for the runs' initial models (`runs.initial_model`), keyed
    `NAME@init` or `A@init / B@init` and drawn dashed on the same picture.
    `pabs-summary.csv` has each set's angles pooled (`pabs.summary`).
    """
    from training import plots, runs
    from training.analysis import pabs

    names = run_names(run_dirs)
    if across and len(names) < 2:
        raise ValueError(
            "pabs --across compares runs pairwise; expected two or more run "
            f"directories, received {len(names)}."
        )
    suffixes = ("", INIT) if init else ("",)
    labels, kept = {}, {}  # the models to compare across, or the angles within
    for run_dir, name in zip(run_dirs, names, strict=True):
        run = runs.load_run(run_dir)
        labels[name] = run_label(name, run.recipe)
        models = {name: run.model}
        if init:
            models[name + INIT] = runs.initial_model(run_dir)
        for key, model in models.items():
            kept[key] = model if across else pabs.pairwise_angles(model)
    if across:
        angles, figures = {}, []
        for a, b in itertools.combinations(names, 2):
            for at in suffixes:
                key = f"{a}{at} / {b}{at}"
                angles[key] = pabs.cross_angles(kept[a + at], kept[b + at])
            title = f"Principal angles: {labels[a]} against {labels[b]}"
            file_name = plots.file_name(f"pabs-{a}-vs-{b}", ".png")
            figures.append((f"{a} / {b}", file_name, title))
    else:
        angles = kept
        figures = [
            (
                name,
                plots.file_name(f"pabs-{name}", ".png"),
                f"Principal angles: {labels[name]}",
            )
            for name in names
        ]
    plots.make_out_dir(out)
    for key, file_name, title in figures:
        initial = " / ".join(name + INIT for name in key.split(" / "))
        pabs.plot(angles[key], out / file_name, title, baseline=angles.get(initial))
    runs.write_json(out / "pabs.json", angles)
    plots.write_table(
        out / "pabs-summary.csv",
        [{"set": key, **pabs.summary(results)} for key, results in angles.items()],
    )
    return angles


def pabs_lines(angles):
    """What `pabs` prints: each pair's range and median, then each set's."""
    from training.analysis import pabs

    lines = []
    for key, results in angles.items():
        for a in results:
            lines.append(
                f"{key} {a['layer']} {a['group']} {a['pair']}: "
                f"{min(a['angles']):.1f}-{max(a['angles']):.1f} degrees, "
                f"median {np.median(a['angles']):.1f}"
            )
    for key, results in angles.items():
        pooled = pabs.summary(results)
        pairs = f"{pooled['pairs']} pair" + ("s" if pooled["pairs"] > 1 else "")
        lines.append(
            f"{key}: median {pooled['median']:.1f} degrees (min {pooled['min']:.1f}, "
            f"max {pooled['max']:.1f}) over {pooled['angles']} angles of {pairs}"
        )
    return lines


def analyze_routing(run_dirs, out, split, texts=(), samples=4):
    from training import plots, runs
    from training.analysis import routing
    from zoo.checks import check_positive_int

    check_positive_int("--samples", samples)
    computed = []
    for run_dir, name in zip(run_dirs, run_names(run_dirs), strict=True):
        run = runs.load_run(run_dir)
        routing.routed_layers(run.model)
        strings = (
            encode_texts(run.task, texts)
            if texts
            else sample_ids(run.task, split, samples)
        )
        if not strings or not all(len(s) for s in strings):
            raise ValueError("routing needs non-empty strings; none were found.")
        padded = np.zeros((len(strings), max(len(s) for s in strings)), "int32")
        for row, string in enumerate(strings):
            padded[row, : len(string)] = string
        tokens = [token_names(run.vocabulary, s) for s in strings]
        layers = routing.routing_weights(run.model, padded)
        computed.append((name, run.recipe, tokens, layers))
    plots.make_out_dir(out)
    results = {}
    for name, recipe, tokens, layers in computed:
        rows = []
        for layer, groups, weights in layers:
            per_token = routing.mean_weight_per_token(tokens, weights)
            rows += routing.table_rows(layer, groups, per_token)
            routing.plot(
                tokens,
                weights,
                groups,
                out / plots.file_name(f"routing-{name}-{layer}", ".png"),
                title=f"Routing: {run_label(name, recipe)}, {layer}",
                choice_name="cell" if groups == ["alpha"] else "choice",
            )
        plots.write_table(out / plots.file_name(f"routing-{name}", ".csv"), rows)
        results[name] = rows
    return results


def analyze_stack(run_dirs, out, split, texts=(), samples=3):
    from training import plots, runs
    from training.analysis import stack_actions
    from zoo.checks import check_positive_int

    check_positive_int("--samples", samples)
    computed = []
    for run_dir, name in zip(run_dirs, run_names(run_dirs), strict=True):
        run = runs.load_run(run_dir)
        check_kind(run.recipe, ("recognition",), "stack", run_dir)
        stack_actions.check_stack_recognizer(run.model)
        check_split(run.task, split)
        language = run.task.language
        arrays = run.task.arrays[split]
        positives = [row[row != 0] for row in arrays.inputs[arrays.labels == 1]]
        shares = [
            stack_actions.agreement(
                t["actions"], stack_actions.pda_actions(s, language)
            )
            for s, t in zip(
                positives, stack_actions.trace(run.model, positives), strict=True
            )
        ]
        matching = sum(s["matching"] for s in shares)
        counted = sum(s["steps"] for s in shares)
        shown = encode_texts(run.task, texts) if texts else positives[:samples]
        traced = stack_actions.trace(run.model, shown)
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
        stack_actions.plot(
            [shown["tokens"] for shown in result["shown"]],
            traced,
            out / plots.file_name(f"stack-{name}", ".png"),
            title=f"Stack actions: {run_label(name, recipe)}",
        )
    results = {name: result for name, _, result, _ in computed}
    runs.write_json(out / "stack.json", results)
    return results


def analyze_ldpa(run_dirs, out, split):
    from training import plots, runs
    from training.analysis import ldpa

    metrics = {}
    for run_dir, name in zip(run_dirs, run_names(run_dirs), strict=True):
        run = runs.load_run(run_dir)
        check_kind(run.recipe, ("dyck", "closing_bracket"), "ldpa", run_dir)
        check_split(run.task, split)
        metrics[run_label(name, run.recipe)] = run.task.evaluate(run.model, split)
    plots.make_out_dir(out)
    ldpa.plot(metrics, out / "ldpa.png")
    plots.write_table(out / "ldpa.csv", ldpa.table_rows(metrics))
    return metrics


def analyze_curves(run_dirs, out, column="val_wcpa"):
    """Writes `curves.png` and `curves.csv`; returns the curves and the
    folders whose log has no `column` (left out; an error if all are)."""
    from training import plots
    from training.analysis import curves

    found, lacking = curves.read_curves(run_dirs, run_names(run_dirs), column)
    if not found:
        listed = ", ".join(map(str, lacking))
        raise ValueError(
            f"no per-epoch {column} in any of these records ({listed}): they were "
            "trained before it was logged, or it is NaN in every epoch; expected "
            "runs that logged a number for it (the Dyck "
            "tasks log val_wcpa since issue 25: train these again)."
        )
    plots.make_out_dir(out)
    curves.plot(found, out / "curves.png", column)
    plots.write_table(out / "curves.csv", curves.table_rows(found, column))
    return found, lacking


EXAMPLES = (
    (
        "python -m training.analyze pabs runs/so_dyck --init --out analysis/pabs",
        "principal angles of a second-order LSTM run, trained and at initialization",
    ),
    (
        "python -m training.analyze curves results/so_dyck/*/seed-0 --out "
        "analysis/curves",
        "validation WCPA per epoch of recorded runs (loads no model)",
    ),
)


def main(argv=None):
    parser = command_line.parser(
        "python -m training.analyze",
        __doc__,
        EXAMPLES,
        notes="\n".join(__doc__.splitlines()[4:]).rstrip(),
    )
    parser.add_argument("what", choices=ANALYSES)
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    parser.add_argument("--out", required=True, help="folder for the PNG and numbers")
    parser.add_argument("--split", default="test")
    parser.add_argument(
        "--text",
        action="append",
        default=[],
        help="routing/stack: a string to show (repeatable); default: the split's",
    )
    parser.add_argument("--samples", type=int, default=4, help="strings to show")
    parser.add_argument("--fraction", type=float, default=0.1, help="surprisal")
    parser.add_argument(
        "--column", default="val_wcpa", help="curves: the log.csv column to draw"
    )
    parser.add_argument(
        "--init",
        action="store_true",
        help="pabs: also the runs at initialization (the baseline, dashed)",
    )
    parser.add_argument(
        "--across",
        action="store_true",
        help="pabs: between corresponding matrices of each pair of runs",
    )
    args = parser.parse_intermixed_args(argv)
    out = Path(args.out)
    try:
        if args.what != "pabs" and (args.init or args.across):
            option = "--init" if args.init else "--across"
            raise ValueError(
                f"{option} is an option of pabs; received it with {args.what}."
            )
        if args.what != "curves":  # the only analysis that loads no model
            command_line.start_tensorflow()
        from training import plots

        plots.check_out_dir(out)  # created once the input has passed its checks
        if args.what == "surprisal":
            result = analyze_surprisal(args.run_dirs, out, args.split, args.fraction)
            for label, after in zip(result["runs"], result["after"], strict=True):
                values = ", ".join(f"{v:.3f}" for v in after)
                print(f"{label}: {values} bits at 0..{len(after) - 1} steps after")
            if "advantage" in result:
                print(advantage_line(result["runs"], result["advantage"]))
        elif args.what == "pabs":
            angles = analyze_pabs(args.run_dirs, out, args.init, args.across)
            print("\n".join(pabs_lines(angles)))
        elif args.what == "routing":
            analyze_routing(args.run_dirs, out, args.split, args.text, args.samples)
        elif args.what == "stack":
            for name, result in analyze_stack(
                args.run_dirs, out, args.split, args.text, args.samples
            ).items():
                share = result["pda_agreement"]
                share = "no" if share is None else f"{share:.4f} of"
                print(
                    f"{name}: most likely action = a correct PDA's on {share} "
                    f"{result['steps']} steps of positive {args.split} strings"
                )
        elif args.what == "ldpa":
            for label, metrics in analyze_ldpa(args.run_dirs, out, args.split).items():
                print(f"{label}: WCPA {metrics['wcpa']:.4f}")
        else:
            found, lacking = analyze_curves(args.run_dirs, out, args.column)
            for folder in lacking:
                print(
                    f"{folder}: no per-epoch {args.column} in this record (trained "
                    "before it was logged, or NaN in every epoch); left out"
                )
            for name, (_, epochs, values) in found.items():
                print(
                    f"{name}: {len(epochs)} epochs, {args.column} "
                    f"{values[0]:.4g} -> {values[-1]:.4g} (max {max(values):.4g})"
                )
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
