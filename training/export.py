"""Exports a trained run as a SavedModel for inference.

    python -m training.export RUN_DIR OUT_DIR [--litert] [--onnx]

RUN_DIR may be a preset: `preset:NAME` (`zoo.presets.available()`) or
`preset:PATH`. The library function behind it is
`training.runs.saved_model.export_run`, whose module describes the SavedModel's
endpoints (`serve`, `serve_text`, the streaming ones) and how a process on
another Keras backend writes it. `--litert` adds `serve_step.tflite`
(`training.runs.litert`), the step at batch 1 in LiteRT builtin ops;
`--onnx` adds `serve_step.onnx` (`training.runs.onnx_step`), the same step
for ONNX Runtime.

A run whose training has not finished (interrupted: it holds `backup/`) is
exported all the same, its best model so far, with one line on stderr
saying so.
"""

import sys

from training.cli import command_line

EXAMPLES = (
    (
        "python -m training.export runs/dyck2_dyck_rnn-small exported/dyck_rnn",
        "a trained run's SavedModel, for TensorFlow Serving or tf.saved_model.load",
    ),
    (
        "python -m training.export preset:dyck_rnn_m4 exported/dyck_rnn_m4",
        "a built-in preset's",
    ),
)


def main(argv=None):
    parser = command_line.parser("python -m training.export", __doc__, EXAMPLES)
    parser.add_argument("run_dir", help="a run directory, preset:NAME or preset:PATH")
    parser.add_argument("out_dir", help="the SavedModel's folder (new, or an export)")
    parser.add_argument(
        "--litert",
        action="store_true",
        help="also write OUT_DIR/serve_step.tflite: the step, builtin ops only",
    )
    parser.add_argument(
        "--onnx",
        action="store_true",
        help="also write OUT_DIR/serve_step.onnx: the step, for ONNX Runtime",
    )
    args = parser.parse_args(argv)
    try:
        command_line.start_tensorflow()
        from training.runs import run_dirs, runs, saved_model

        why = run_dirs.why_unfinished(runs.check_run(args.run_dir))
        path = saved_model.export_run(
            args.run_dir, args.out_dir, args.litert, args.onnx
        )
    except KeyboardInterrupt:
        parser.exit(130, f"{parser.prog}: interrupted; {args.out_dir} is as it was\n")
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(saved_model.summary(path))
    if why is not None:  # exported all the same: a model to try while it trains
        sys.stderr.write(
            f"{parser.prog}: warning: {args.run_dir} is not a finished run: {why}; "
            "exported the best model it holds so far.\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(command_line.run(main))
