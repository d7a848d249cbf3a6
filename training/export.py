"""Exports a trained run as a SavedModel for inference.

    python -m training.export RUN_DIR OUT_DIR

RUN_DIR may be a preset: `preset:NAME` (`zoo.presets.available()`) or
`preset:PATH`. The library function behind it is
`training.saved_model.export_run`, whose module describes the SavedModel's
endpoints (`serve`, `serve_text`) and how a process on another Keras
backend writes it.
"""

import argparse
import sys

from training.saved_model import export_run, summary


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m training.export", description=__doc__.splitlines()[0]
    )
    parser.add_argument("run_dir")
    parser.add_argument("out_dir")
    args = parser.parse_args(argv)
    try:
        path = export_run(args.run_dir, args.out_dir)
    except KeyboardInterrupt:
        parser.exit(130, f"{parser.prog}: interrupted; {args.out_dir} is as it was\n")
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(summary(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
