"""The step function of an export as an ONNX file, for ONNX Runtime.

`write_onnx(saved_model_dir, path)` converts the export's `serve_step` at a
static batch (the step the LiteRT file is made from, `litert.static_step`)
with tf2onnx at ONNX opset 17; the `onnx` extra installs tf2onnx and
onnxruntime. Its inputs keep `serve_step`'s names (`token_ids`,
`state_L_I`). ONNX names each value once, so the new state comes out as
`next_state_L_I`, beside the step's other outputs under their own names
(`log_probabilities`, ...): a client feeds `next_state_L_I` back as
`state_L_I`. tf2onnx missing, or a step it cannot convert, is a one-line
`ValueError`.
"""

import importlib.util

import tensorflow as tf

from training.runs.litert import last_line, static_step

OPSET = 17


def check_available():
    """A one-line `ValueError` where tf2onnx is not installed: what an export
    asks before it writes anything."""
    if importlib.util.find_spec("tf2onnx") is None:
        raise ValueError(
            'ONNX export needs tf2onnx: pip install ".[onnx]" (tf2onnx and '
            "onnxruntime)."
        )


def write_onnx(saved_model_dir, path, cell="the model", batch_size=1):
    """Writes the `.onnx` of the export's `serve_step` to `path`."""
    check_available()
    import tf2onnx

    _, function = static_step(saved_model_dir, cell, batch_size, runtime="ONNX")
    specs = function.input_signature
    inputs = {spec.name for spec in specs}

    @tf.function(input_signature=specs)
    def renamed(*args):  # an output named as an input is the state's next value
        outputs = function(*args)
        return {f"next_{k}" if k in inputs else k: v for k, v in outputs.items()}

    try:
        proto, _ = tf2onnx.convert.from_function(
            renamed, input_signature=specs, opset=OPSET
        )
    except Exception as error:  # tf2onnx raises its own error classes
        raise ValueError(
            f"The step of {cell} cannot be converted to ONNX (tf2onnx, opset "
            f"{OPSET}): {last_line(error)}"
        ) from None
    with open(path, "wb") as file:
        file.write(proto.SerializeToString())
    return path
