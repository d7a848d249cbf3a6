"""Turns a finished run directory into a preset: the model, its vocabulary, a card.

    python -m training.preset RUN_DIR OUT_DIR [--name NAME]
        [--table TABLE --row ROW] [--metric KEY] [--tolerance T]
    python -m training.preset --remeasure PRESET

OUT_DIR receives the preset (`zoo.presets` describes its files); with
`OUT_DIR = zoo/presets/NAME` it is a built-in preset, which
`zoo.from_preset("NAME")` and `preset:NAME` find. `--table`/`--row` name the
reproduction table row the run is a seed of; the run's recipe is checked to
be that row's at its seed, and the card's retraining command is the row's.
Without them the command is the recipe with the overrides that make it.

The card states a metric to re-measure (`--metric`, default by task: test
WCPA, strict test accuracy, test bits per token) and a tolerance:
`--remeasure PRESET` measures it again, on freshly generated data of the
same distribution for Dyck and recognition tasks (the data seed
`FRESH_SEED`), on the corpus's test split for a language model, and exits
1 when it falls outside the tolerance.
"""

import sys

from training.cli import command_line
from training.reproduction import preset_builder, preset_readme

EXAMPLES = (
    (
        "python -m training.preset runs/dyck2_dyck_rnn-small presets/dyck_rnn",
        "a finished run as a preset with its card (retrain command, metric)",
    ),
    (
        "python -m training.preset --remeasure dyck_rnn_m4",
        "measure a preset's card metric again; exit 1 outside its tolerance",
    ),
)


def main(argv=None):
    parser = command_line.parser("python -m training.preset", __doc__, EXAMPLES)
    parser.add_argument("run_dir", nargs="?", help="a finished run directory")
    parser.add_argument("out_dir", nargs="?", help="the preset's folder")
    parser.add_argument("--name", help="the preset's name (default: OUT_DIR's)")
    parser.add_argument("--table", help="the reproduction table of the run")
    parser.add_argument("--row", help="the table's row the run is a seed of")
    parser.add_argument("--metric", help="SPLIT.NAME to re-measure")
    parser.add_argument("--tolerance", type=float, help="of the re-measurement")
    parser.add_argument("--remeasure", metavar="PRESET", help="check a preset")
    args = parser.parse_args(argv)
    if args.remeasure is not None:
        if args.run_dir or args.out_dir:
            parser.error("--remeasure takes no RUN_DIR or OUT_DIR.")
        try:
            command_line.start_tensorflow()
            value, plan = preset_builder.remeasure(args.remeasure)
        except KeyboardInterrupt:
            parser.exit(130, f"{parser.prog}: interrupted\n")
        except (ValueError, OSError) as error:
            parser.exit(2, f"{parser.prog}: error: {error}\n")
        within = abs(value - plan["value"]) <= plan["tolerance"]
        print(
            f"{plan['metric']}: {value:.4f} re-measured, {plan['value']:.4f} on the "
            f"card, tolerance {plan['tolerance']:g}: "
            f"{'within' if within else 'OUTSIDE'}"
        )
        return 0 if within else 1
    if args.run_dir is None or args.out_dir is None:
        parser.error("RUN_DIR and OUT_DIR are required (or --remeasure PRESET).")
    try:
        command_line.start_tensorflow()
        card = preset_builder.save_preset(
            args.run_dir,
            args.out_dir,
            name=args.name,
            table=args.table,
            row=args.row,
            metric=args.metric,
            tolerance=args.tolerance,
        )
    except KeyboardInterrupt:
        parser.exit(130, f"{parser.prog}: interrupted; {args.out_dir} is as it was\n")
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    headline = preset_readme.headline(card)
    print(f"preset {card['name']}: {headline}, {card['size_bytes']:,} bytes")
    print(f"retrain: {card['command']}")
    print(f"folder: {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(command_line.run(main))
