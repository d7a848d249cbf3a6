"""Generation speed: tokens a second and per-token latency, each row in its own process.

    PYTHONPATH=. python benchmarks/generation.py
        [--models mlstm_ptb_char mlstm161 lstm256]
        [--rows compiled compiled_jax serve_step serve_generate litert onnx
                torch_eager torch_script] [--batches 1 64] [--steps 1000]
        [--rounds 3] [--threads 1]

Models (vocabulary V = the `mlstm_ptb_char` preset's 51 tokens):
- `mlstm_ptb_char`: the preset (an mLSTM of 512 units, 1.67M parameters);
- `mlstm161`: `zoo.language_model("mlstm", V, 161)`, random weights: the
  shape of the preset before it was retrained, where issue 59 measured
  PyTorch eager at 7,449 tokens a second;
- `lstm256`: `zoo.language_model("lstm", V, 256)`, random weights.

Rows, each generating `--steps` tokens after a one-token prompt for each of
`--batches` rows (tokens a second = batch x steps / seconds; latency =
seconds / steps, one step of the whole batch):
- `compiled`: `zoo.generate` on TensorFlow (one XLA while loop);
- `compiled_jax`: the same on Keras's JAX backend (`jax.lax.while_loop`);
- `serve_step`: a Python loop over a loaded SavedModel's `serve_step`
  (`tf.saved_model.load`), the draw in NumPy (the preset only: it needs an
  export);
- `serve_generate`: the SavedModel's `serve_generate`, texts in and out;
- `litert`: a Python loop over the exported `serve_step.tflite` in LiteRT's
  interpreter, builtin kernels (batch 1 only: its batch is static);
- `onnx`: the same loop over the exported `serve_step.onnx` in ONNX
  Runtime's CPU provider (batch 1 only);
- `torch_eager`: PyTorch's `nn.LSTMCell` at the same width (an embedding,
  the cell, a linear decoder), sampled with `torch.multinomial` in eager
  mode; for `mlstm_ptb_char` the LSTM is the lighter cell (no
  multiplicative matrix), PyTorch having no mLSTM;
- `torch_script`: the same loop as one `torch.jit.script` function.

Every row runs in its own process (TensorFlow and torch in one process end
in a segmentation fault here), on one thread (TensorFlow's pools, XLA's CPU
runtime without Eigen threads, `torch.set_num_threads(1)`, LiteRT's
`num_threads=1`, ONNX Runtime's `intra_op_num_threads=1`; `--threads N`: N
threads each, and XLA's Eigen threads); each row is timed after one untimed
run of the same shape (the compilation), and the rows take turns within each
of `--rounds` rounds; the best round is printed. benchmarks/README.md
("Generation") has a run.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MODELS = ("mlstm_ptb_char", "mlstm161", "lstm256")
ROWS = (
    "compiled",
    "compiled_jax",
    "serve_step",
    "serve_generate",
    "litert",
    "onnx",
    "torch_eager",
    "torch_script",
)


def thread_environment(threads):
    """A worker's environment for `threads` threads (1: XLA's CPU runtime
    without Eigen threads too)."""
    environment = {
        "TF_NUM_INTRAOP_THREADS": str(threads),
        "TF_NUM_INTEROP_THREADS": str(threads),
        "OMP_NUM_THREADS": str(threads),
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    if threads == 1:
        environment["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false"
    return environment


def tensorflow_threads(threads):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)


NEEDS_EXPORT = ("serve_step", "serve_generate", "litert", "onnx")
VOCABULARY = os.path.join(
    os.path.dirname(__file__),
    "..",
    "zoo",
    "presets",
    "mlstm_ptb_char",
    "vocabulary.json",
)


def keras_model(name):
    import keras

    import zoo

    if name == "mlstm_ptb_char":
        return zoo.LanguageModel.from_preset("mlstm_ptb_char")
    keras.utils.set_random_seed(0)
    vocab = zoo.from_preset("mlstm_ptb_char").tokenizer.vocabulary_size()
    cell, units = ("mlstm", 161) if name == "mlstm161" else ("lstm", 256)
    model = zoo.language_model(cell, vocab, units)
    model.build((None, None))
    return model


def timed(run):
    run()  # compiles (or warms) the shape
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def time_compiled(model_name, batch, steps, threads):
    tensorflow_threads(threads)
    import zoo

    model = keras_model(model_name)
    prompts = [[1]] * batch
    return timed(lambda: zoo.generate(model, prompts, steps, top_k=None, seed=0))


def time_serving(row, export, batch, steps, threads):
    import numpy as np

    if row == "litert":
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        interpreter = Interpreter(
            os.path.join(export, "serve_step.tflite"),
            num_threads=threads,
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        step = interpreter.get_signature_runner()
        names = [n for n in step.get_input_details() if n != "token_ids"]
        zeros = {
            n: np.zeros(step.get_input_details()[n]["shape"], np.float32) for n in names
        }
        as_array = np.asarray
    elif row == "onnx":
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        path = os.path.join(export, "serve_step.onnx")
        session = onnxruntime.InferenceSession(path, options, ["CPUExecutionProvider"])
        inputs = [i for i in session.get_inputs() if i.name != "token_ids"]
        names = [i.name for i in inputs]
        zeros = {i.name: np.zeros(i.shape, np.float32) for i in inputs}
        outputs = [o.name.removeprefix("next_") for o in session.get_outputs()]

        def step(token_ids, **state):
            ran = session.run(None, {"token_ids": token_ids, **state})
            return dict(zip(outputs, ran, strict=True))

        as_array = np.asarray
    else:
        import tensorflow as tf

        tensorflow_threads(threads)
        loaded = tf.saved_model.load(export)
        if row == "serve_generate":
            texts = tf.constant(["t"] * batch)
            arguments = dict(
                max_length=tf.constant(steps),
                temperature=tf.constant(1.0),
                top_k=tf.constant(1000),
                seed=tf.constant(0),
            )
            return timed(lambda: loaded.serve_generate(texts=texts, **arguments))
        zeros = {k: v.numpy() for k, v in loaded.serve_initial_state(batch).items()}
        names = list(zeros)

        def step(token_ids, **state):
            return loaded.serve_step(tf.constant(token_ids), **state)

        def as_array(tensor):
            return tensor.numpy()

    rng = np.random.default_rng(0)

    def run():
        state, token = dict(zeros), np.ones(batch, np.int32)
        for _ in range(steps):
            out = step(token_ids=token, **state)
            logp = as_array(out["log_probabilities"])
            token = np.argmax(logp + rng.gumbel(size=logp.shape), -1).astype(np.int32)
            state = {n: out[n] for n in names}

    return timed(run)


def time_torch(row, units, vocab, batch, steps, threads):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)

    class Sampler(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, min(units, 128))
            self.cell = torch.nn.LSTMCell(min(units, 128), units)
            self.decode = torch.nn.Linear(units, vocab)

        def forward(self, steps: int, token: torch.Tensor) -> torch.Tensor:
            h = torch.zeros(token.shape[0], self.cell.hidden_size)
            c = torch.zeros(token.shape[0], self.cell.hidden_size)
            for _ in range(steps):
                h, c = self.cell(self.embed(token), (h, c))
                probabilities = torch.softmax(self.decode(h), -1)
                token = torch.multinomial(probabilities, 1)[:, 0]
            return token

    loop = Sampler().eval()
    if row == "torch_script":
        loop = torch.jit.script(loop)
    token = torch.ones(batch, dtype=torch.long)
    with torch.no_grad():
        return timed(lambda: loop(steps, token))


def worker(args):
    if args.row == "export":
        from training.runs import saved_model

        saved_model.export_run(
            "preset:mlstm_ptb_char", args.export, litert=True, onnx=True
        )
        return None
    if args.row in ("compiled", "compiled_jax"):
        return time_compiled(args.model, args.batch, args.steps, args.threads)
    if args.row in NEEDS_EXPORT:
        return time_serving(args.row, args.export, args.batch, args.steps, args.threads)
    units = {"mlstm_ptb_char": 512, "mlstm161": 161, "lstm256": 256}[args.model]
    return time_torch(args.row, units, args.vocab, args.batch, args.steps, args.threads)


def run_worker(row, model, batch, args, export):
    environment = {**os.environ, **thread_environment(args.threads)}
    if row == "compiled_jax":
        environment["KERAS_BACKEND"] = "jax"
    command = [sys.executable, __file__, "--worker", row, "--model", model]
    command += ["--batch", str(batch), "--steps", str(args.steps)]
    command += ["--export", export, "--vocab", str(args.vocab)]
    command += ["--threads", str(args.threads)]
    done = subprocess.run(command, env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{row} ({model}, batch {batch}) failed: {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def cases(args):
    for model in args.models:
        for batch in args.batches:
            for row in args.rows:
                if row in NEEDS_EXPORT and model != "mlstm_ptb_char":
                    continue
                if row in ("litert", "onnx") and batch != 1:
                    continue
                yield model, batch, row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS))
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 64])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worker", dest="row", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--export", help=argparse.SUPPRESS)
    parser.add_argument("--vocab", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.vocab is None:  # the preset's vocabulary, for the PyTorch rows
        with open(VOCABULARY) as file:
            args.vocab = len(json.load(file)["tokens"])
    if args.row:
        print(json.dumps(worker(args)))
        return
    import platform

    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in open("/proc/cpuinfo")
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    threads = "one thread" if args.threads == 1 else f"{args.threads} threads"
    print(f"CPU: {cpu}; {threads} a row; {args.steps} steps after a 1-token prompt")
    with tempfile.TemporaryDirectory() as folder:
        export = os.path.join(folder, "export")
        if any(row in NEEDS_EXPORT for row in args.rows):
            run_worker("export", "mlstm_ptb_char", 1, args, export)
        best = {}
        for _ in range(args.rounds):
            for case in cases(args):
                seconds = run_worker(case[2], case[0], case[1], args, export)
                best[case] = min(best.get(case, seconds), seconds)
    print("| model | batch | row | tokens/s | per step (µs) |")
    print("|---|---|---|---|---|")
    for (model, batch, row), seconds in best.items():
        rate = batch * args.steps / seconds
        latency = seconds / args.steps * 1e6
        print(f"| {model} | {batch} | {row} | {rate:,.0f} | {latency:,.0f} |")


if __name__ == "__main__":
    main()
