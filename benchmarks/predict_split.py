"""What predicting one split costs: `model.predict` against `predict_on_batch`.

    PYTHONPATH=. python benchmarks/predict_split.py [--units 8] [--rows 256 1024]
        [--calls 20]

The recogniser LSTM (`zoo.recognizer("lstm", 6, UNITS, embedding_dim=8)`,
XLA) predicts a split of ROWS random strings of length 64 (a multiple of
`training.tasks.task.PREDICT_LENGTH_STEP`, as `Task._predict` pads them)
in batches of `PREDICT_BATCH` rows, two ways: `model.predict` (a `tf.data`
pipeline and its iterators each call) and one `predict_on_batch` call a
batch (`training.tasks.task.predict_in_batches`, what `Task._predict`
runs). Prints whether the outputs are equal and the best ms a call of each
over three rounds, the two in turns.
"""

import argparse
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--rows", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    import keras
    import numpy as np

    import zoo
    from training.tasks.task import (
        PREDICT_BATCH,
        PREDICT_LENGTH_STEP,
        predict_in_batches,
    )

    model = zoo.recognizer("lstm", vocab_size=6, units=args.units, embedding_dim=8)
    model.compile(jit_compile=True)
    for rows in args.rows:
        inputs = np.random.default_rng(0).integers(
            1, 6, size=(rows, PREDICT_LENGTH_STEP)
        )

        def via_predict(inputs=inputs):
            return model.predict(inputs, batch_size=PREDICT_BATCH, verbose=0)

        def via_batches(inputs=inputs):
            return predict_in_batches(model, inputs, PREDICT_BATCH)

        ways = {"model.predict": via_predict, "predict_on_batch": via_batches}
        results = [keras.tree.flatten(way()) for way in ways.values()]
        equal = all(map(np.array_equal, *results))
        best = dict.fromkeys(ways, float("inf"))
        for _ in range(3):
            for name, way in ways.items():
                started = time.perf_counter()
                for _ in range(args.calls):
                    way()
                seconds = (time.perf_counter() - started) / args.calls
                best[name] = min(best[name], seconds)
        times = ", ".join(f"{name} {s * 1000:.2f} ms" for name, s in best.items())
        print(f"{rows} rows, {args.units} units: outputs equal {equal}; {times}")


if __name__ == "__main__":
    main()
