"""Dynamic evaluation (Krause et al. 2017, "Dynamic evaluation of neural
sequence models", sections 4-5).

The split is read in order in segments of `segment` tokens, the state carried
from one to the next. Each segment is scored first, then the weights take a
gradient step on that segment's mean cross-entropy and decay towards the
trained weights `theta_g` before the next segment is read:

    SGD (eq. 8):       theta <- theta - eta grad + lambda (theta_g - theta)
    RMS (eqs. 9-10):   theta <- theta - eta grad / (sqrt(MS) + eps)
                                  + min(1, lambda RMS_norm) (theta_g - theta)

where `MS` is the mean squared gradient of segments of other text (Krause et
al. use the training split) and `RMS_norm = sqrt(MS) / mean(sqrt(MS))`, the
mean over all parameters. The weights changed are a stateful copy's; the
model passed in (and anything saved) is never changed. The static number is
the same segmentation read without updates.

`evaluate_dynamic` runs it on a run directory's split and writes the result
beside the run (`python -m training.evaluate RUN_DIR --dynamic`);
`report_dynamic` is what that command prints.
"""

import math

import keras
import numpy as np

from training.analysis.run_inputs import check_kind, stream_ids
from training.core import metrics as metrics_lib
from training.core.compiled import loss_and_gradients
from training.core.scoring import (
    check_stream,
    segment_losses,
    segments,
    stateful_copy,
)
from training.runs import run_files, runs
from zoo.checks import check_number, check_positive_int

# The settings of `evaluate_dynamic` (the options of `python -m
# training.evaluate --dynamic`) and their defaults.
DYNAMIC_DEFAULTS = {
    "learning_rate": 1e-3,
    "decay": 0.0,
    "segment": 20,
    "rms": False,
    "rms_segments": 200,
}


def _numbers(total, count):
    entropy = total / count
    return {
        "cross_entropy": entropy,
        "perplexity": metrics_lib.perplexity(entropy),
        "bits_per_token": metrics_lib.bits_per_character(entropy),
    }


def gradient_statistics(build_model, model, ids, segment=20, rows=1, max_segments=None):
    """Krause et al.'s `MS`: the mean squared gradient over segments of `ids`.

    The gradients are of each segment's mean cross-entropy with the trained
    weights (no updates), the state carried; `max_segments` reads only the
    first ones. Returns one array per trainable variable of the model.
    """
    ids = check_stream(ids, rows, name="text for the gradient statistics")
    evaluator = stateful_copy(build_model, model, rows)
    variables = evaluator.trainable_variables
    step = loss_and_gradients(evaluator, segment_losses)
    sums, count = [np.zeros(v.shape) for v in variables], 0
    for inputs, targets in segments(ids, rows, segment):
        _, grads = step(inputs, targets)
        for total, grad in zip(sums, grads, strict=True):
            total += np.square(grad)
        count += 1
        if max_segments and count >= max_segments:
            break
    return [total / count for total in sums]


def dynamic_evaluation(
    build_model,
    model,
    ids,
    learning_rate=1e-3,
    decay=0.0,
    segment=20,
    rows=1,
    statistics=None,
    epsilon=1e-8,
):
    """Static and dynamic cross-entropy of `model` on the token stream `ids`.

    Args:
        build_model: `build_model(stateful=True, batch_size=rows)` builds the
            run's model (e.g. a task's `build_model`).
        model: The trained model; its weights are read, never changed.
        ids: The split's token ids, 1-D.
        learning_rate: `eta`. Default: 1e-3.
        decay: `lambda`, the pull towards the trained weights per segment.
            Default: 0.
        segment: Tokens per segment (Krause et al.'s `n`). Default: 20.
        rows: Contiguous rows read in parallel (Krause et al. read one);
            a step follows the mean gradient of all rows. Default: 1.
        statistics: `gradient_statistics(...)` for the RMS-normalised
            update; None for plain SGD. Default: None.
        epsilon: Added to `sqrt(MS)`. Default: 1e-8.

    Returns:
        A dict: `"static"` and `"dynamic"` (`cross_entropy` in nats,
        `perplexity`, `bits_per_token`), `"tokens"` scored, `"segments"`.
    """
    check_number("learning_rate", learning_rate, low=0)
    check_number("decay", decay, 0, 1)
    check_positive_int("segment", segment)
    ids = check_stream(ids, rows)
    pieces = segments(ids, rows, segment)
    count = sum(int(targets.size) for _, targets in pieces)

    static = stateful_copy(build_model, model, rows)
    static_total = sum(
        float(np.sum(keras.ops.convert_to_numpy(segment_losses(static, x, y))))
        for x, y in pieces
    )

    evaluator = stateful_copy(build_model, model, rows)
    variables = evaluator.trainable_variables
    trained = [np.array(keras.ops.convert_to_numpy(v.value)) for v in variables]
    if statistics is None:
        scales = [np.float32(1.0)] * len(variables)
        decays = [np.float32(decay)] * len(variables)
    else:
        if len(statistics) != len(variables):
            raise ValueError(
                f"`statistics` has {len(statistics)} arrays; expected one per "
                f"trainable variable ({len(variables)})."
            )
        roots = [np.sqrt(ms) for ms in statistics]
        mean_root = np.concatenate([r.reshape(-1) for r in roots]).mean()
        scales = [(1.0 / (r + epsilon)).astype(np.float32) for r in roots]
        decays = [
            np.minimum(1.0, decay * r / mean_root).astype(np.float32) for r in roots
        ]

    # Scored and differentiated in one compiled call (`compiled`: tf.function
    # or jax.jit), then the update, in float32 as the weights are.
    step = loss_and_gradients(evaluator, segment_losses)
    dynamic_total = 0.0
    for inputs, targets in pieces:
        losses, grads = step(inputs, targets)
        dynamic_total += float(np.sum(losses))
        for variable, grad, start, scale, pull in zip(
            variables, grads, trained, scales, decays, strict=True
        ):
            value = keras.ops.convert_to_numpy(variable.value)
            variable.assign(
                value - learning_rate * grad * scale + pull * (start - value)
            )
    return {
        "static": _numbers(static_total, count),
        "dynamic": _numbers(dynamic_total, count),
        "tokens": count,
        "segments": len(pieces),
    }


def evaluate_dynamic(run_dir, split="test", **settings):
    """Returns `(task, result)`: static and dynamic numbers of the run on `split`.

    `settings` are those of `DYNAMIC_DEFAULTS`; `result` holds them beside
    `dynamic_evaluation`'s dict. Nothing in `run_dir` but the result
    file is written, and that only when the settings are valid (finite and
    in range, checked before the run is loaded) and the dynamic
    cross-entropy is finite (a `ValueError` otherwise).
    """
    unknown = sorted(set(settings) - set(DYNAMIC_DEFAULTS))
    if unknown:
        raise TypeError(f"Unknown dynamic-evaluation settings: {unknown}.")
    settings = {**DYNAMIC_DEFAULTS, **settings}
    for key in ("segment", "rms_segments"):
        if settings[key] < 1:
            raise ValueError(
                f"--{key.replace('_', '-')} must be at least 1; received "
                f"{settings[key]!r}."
            )
    check_number("--learning-rate", settings["learning_rate"], low=0)
    check_number("--decay", settings["decay"], 0, 1)
    path = None
    if not runs.read_only(run_dir):  # a preset
        path = runs.check_run(run_dir) / f"evaluation-{split}-dynamic.json"
        run_files.check_claim(path, "python -m training.evaluate --dynamic")
    run = runs.load_run(run_dir)
    check_kind(run.recipe, ("language_model",), "Dynamic evaluation", run_dir)
    task, model = run.task, run.model
    ids = stream_ids(task, split)
    statistics = None
    if settings["rms"]:
        statistics = gradient_statistics(
            task.build_model,
            model,
            task.encoded["train"].ids,
            segment=settings["segment"],
            max_segments=settings["rms_segments"],
        )
    result = dynamic_evaluation(
        task.build_model,
        model,
        ids,
        learning_rate=settings["learning_rate"],
        decay=settings["decay"],
        segment=settings["segment"],
        statistics=statistics,
    )
    result["settings"] = settings
    if not math.isfinite(result["dynamic"]["perplexity"]):
        raise ValueError(
            f"Dynamic evaluation diverged: the cross-entropy became "
            f"{result['dynamic']['cross_entropy']} at --learning-rate "
            f"{settings['learning_rate']:g}; expected a smaller learning rate "
            "(nothing was written)."
        )
    if path is not None:
        run_files.claim(path, "python -m training.evaluate --dynamic")
        runs.write_json(path, result)
    return task, result


def report_dynamic(result, split):
    static, dynamic_ = result["static"], result["dynamic"]
    change = dynamic_["perplexity"] / static["perplexity"] - 1
    settings = result["settings"]
    update = "RMS-normalised" if settings["rms"] else "SGD"
    return "\n".join(
        [
            f"{split}, {result['tokens']:,} tokens in {result['segments']:,} "
            f"segments of {settings['segment']} ({update}, learning rate "
            f"{settings['learning_rate']:g}, decay {settings['decay']:g}):",
            f"  static:  cross-entropy {static['cross_entropy']:.4f} nats/token, "
            f"perplexity {static['perplexity']:.2f}, "
            f"{static['bits_per_token']:.4f} bits/token",
            f"  dynamic: cross-entropy {dynamic_['cross_entropy']:.4f} nats/token, "
            f"perplexity {dynamic_['perplexity']:.2f}, "
            f"{dynamic_['bits_per_token']:.4f} bits/token "
            f"(perplexity {change:+.1%})",
        ]
    )
