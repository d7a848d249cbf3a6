"""Brings presets and run records up to the current file formats (safe to re-run).

    python -m training.migrate [FOLDER ...]

Without folders: every built-in preset (`zoo/presets/NAME/`), every run
record under `results/` (`results/[jax/]TABLE/ROW/seed-N/`) and every
search record there (a folder holding `zoo_search.json`); a run directory,
a search's project or a folder of recipe files is migrated when named. A
file already in the current format is left as it is, so it runs again
after a merge that brings presets or records from another branch. Each
folder changed gets one line saying what changed.
`training.reproduction.format_migration` says what each migration changes.
"""

from pathlib import Path

from training.cli import command_line

EXAMPLES = (
    ("python -m training.migrate", "every built-in preset, run and search record"),
    ("python -m training.migrate zoo/presets/mlstm_ptb_char", "one preset"),
    ("python -m training.migrate runs/ptb", "a run directory of an earlier version"),
    ("python -m training.migrate runs/tuning/lstm", "a search of an earlier version"),
)


def main(argv=None):
    parser = command_line.parser("python -m training.migrate", __doc__, EXAMPLES)
    parser.add_argument(
        "folders", nargs="*", help="presets, records, run directories or searches"
    )
    args = parser.parse_args(argv)
    command_line.start_tensorflow()
    import zoo
    from training.reproduction import format_migration, recipe_migration

    results = Path("results")
    folders = [Path(folder) for folder in args.folders] or [
        *(zoo.presets.preset_dir(name) for name in zoo.presets.available()),
        *sorted(path.parent for path in results.glob("**/seed-*/recipe.json")),
        *sorted(
            path.parent for path in results.rglob(recipe_migration.SEARCH_SETTINGS)
        ),
    ]
    changed = 0
    for folder in folders:
        try:
            if not folder.is_dir():
                raise ValueError("not a folder; expected a preset, record or run")
            done = [format_migration.migrate_manifest(folder)]
            done.append(format_migration.migrate_rerun(folder))
            recipe = folder / "recipe.json"
            if recipe.is_file():  # a run killed before it has none
                done.append(format_migration.migrate_recipe(recipe))
                done.append(recipe_migration.migrate_recipe_form(recipe))
            done.append(recipe_migration.migrate_search_settings(folder))
            done.append(recipe_migration.migrate_recipe_files(folder))
            if (folder / "metrics.json").is_file():
                done.append(format_migration.migrate_metrics(folder))
            if (folder / "vocabulary.json").is_file():
                done.append(format_migration.migrate_vocabulary(folder))
            done.append(format_migration.migrate_backup(folder))
            if format_migration.is_preset(folder):  # a run directory has no format
                done.append(format_migration.migrate_preset(folder))
        except (ValueError, OSError) as error:
            parser.exit(2, f"{parser.prog}: error: {folder}: {error}\n")
        done = [change for change in done if change]
        if done:
            print(f"{folder}: {'; '.join(done)}")
        changed += bool(done)
    print(f"{changed} of {len(folders)} folders migrated; the others were current")


if __name__ == "__main__":
    main()
