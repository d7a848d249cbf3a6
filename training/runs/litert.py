"""The step function of an export as a LiteRT (.tflite) file: builtin ops only.

`write_step(saved_model_dir, path, batch_size=1)` converts the export's
`serve_step` (`training.runs.streaming`) at a static batch with
`tf.lite.OpsSet.TFLITE_BUILTINS` only (no Flex), so the standalone runtime
(`ai-edge-litert`, the `litert` extra) runs it: the single step converts
where the whole-sequence `serve` does not (its loop needs
`tf.TensorListReserve`, a Flex op). Its inputs and outputs keep
`serve_step`'s names (`token_ids`, `state_L_I`, `log_probabilities`); a
client carries the state as with `serve_step`. A model whose step needs an
op outside the builtins is a one-line `ValueError` naming the cell.
"""

import tensorflow as tf


def static_step(saved_model_dir, cell="the model", batch_size=1, runtime="LiteRT"):
    """The export's `serve_step` as a `tf.function` at a static batch.

    Returns `(loaded, function)`: the loaded SavedModel (which holds the
    variables) and the step, its inputs and outputs under `serve_step`'s
    names. The one place the LiteRT and ONNX files get their step from.
    """
    loaded = tf.saved_model.load(str(saved_model_dir))
    if "serve_step" not in loaded.signatures:
        raise ValueError(
            f"The export of {cell} has no serve_step (a classifier or a "
            f"bidirectional tagger): nothing to convert for {runtime}."
        )
    step = loaded.signatures["serve_step"]
    specs = {
        name: tf.TensorSpec([batch_size, *spec.shape[1:]], spec.dtype, name=name)
        for name, spec in step.structured_input_signature[1].items()
    }

    def fixed(*args):
        return step(**dict(zip(specs, args, strict=True)))

    return loaded, tf.function(fixed, input_signature=list(specs.values()))


def last_line(error):
    """A converter's error as its last line (their messages run long)."""
    return (str(error).strip().splitlines()[-1:] or ["no message"])[0]


def write_step(saved_model_dir, path, cell="the model", batch_size=1):
    """Writes the `.tflite` of the export's `serve_step` to `path`."""
    loaded, function = static_step(saved_model_dir, cell, batch_size)
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [function.get_concrete_function()], loaded
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    try:
        flat = converter.convert()
    except Exception as error:  # the converter raises its own error classes
        raise ValueError(
            f"The step of {cell} cannot be expressed in LiteRT builtin ops "
            f"(tf.lite.OpsSet.TFLITE_BUILTINS): {last_line(error)}"
        ) from None
    with open(path, "wb") as file:
        file.write(flat)
    return path
