"""Which cell or choice matrix each token used (the second-order report, Figure 6).

- second-order LSTM (attention routing): `alpha_t = softmax(V x_t / tau)`
  over the cells, read with the cell's own `routing_weights` from the
  layer's inputs; the winner is `argmax_s alpha_{t,s}`.
- mmRNN / mmLSTM: the key `v_t` over the choice matrices (one per gate for
  mmLSTM), the cell's recurrent state, collected by stepping the cell.

Strings are read from the zero (initial) state, one per row; a padded
batch is fine because a step's routing depends only on what came before.

`analyze_routing` runs it on run directories and writes a figure per layer
and the mean weights per token type (`python -m training.analyze routing`).
"""

import collections

import keras
import numpy as np
from keras import ops
from matplotlib.patches import Patch, Rectangle

from training.analysis.pabs import GATES
from training.analysis.run_inputs import (
    encode_texts,
    run_label,
    run_names,
    sample_ids,
    token_names,
)
from training.core import plots
from training.runs import runs
from zoo.cells.multi_matrix import MultiMatrixLSTMCell, MultiMatrixRNNCell
from zoo.cells.second_order import SecondOrderLSTMCell
from zoo.checks import check_positive_int
from zoo.walk import walk_layers


def routed_layers(model):
    """The RNN layers of `model` whose cell routes; ValueError if there are none."""
    layers = [
        layer
        for layer in walk_layers(model)
        if isinstance(
            getattr(layer, "cell", None),
            (SecondOrderLSTMCell, MultiMatrixRNNCell, MultiMatrixLSTMCell),
        )
    ]
    if not layers:
        raise ValueError(
            "Routing needs a model with second_order_lstm, mmrnn or mmlstm layers; "
            f"this model ({model.name}) has none."
        )
    return layers


def _keys(cell, inputs):
    states = cell.get_initial_state(batch_size=ops.shape(inputs)[0])
    keys = []
    for t in range(inputs.shape[1]):
        _, states = cell.call(inputs[:, t], states)
        keys.append(states[-1])  # [batch, groups * k]
    return ops.stack(keys, axis=1)  # [batch, time, groups * k]


def routing_weights(model, ids):
    """The routing weights of every routed layer for token ids `(batch, time)`.

    Returns:
        A list of `(layer name, group names, weights)`, `weights` a NumPy
        array `(batch, time, groups, choices)`: for a second-order cell one
        group (`"alpha"`) over the cells; for mmRNN one (`"key"`), for mmLSTM
        four (`"key i"`, `"key f"`, `"key c"`, `"key o"`) over the choices.
    """
    ids = ops.convert_to_tensor(np.asarray(ids, dtype="int32"))
    results = []
    for layer in routed_layers(model):
        cell = layer.cell
        inputs = keras.Model(model.inputs, layer.input)(ids)  # [batch, time, d]
        batch, time = ids.shape
        if isinstance(cell, SecondOrderLSTMCell):
            flat = ops.reshape(inputs, (batch * time, inputs.shape[-1]))
            alpha = cell.routing_weights(flat)  # [batch * time, cells]
            weights = ops.reshape(alpha, (batch, time, 1, cell.num_cells))
            groups = ["alpha"]
        else:
            keys = _keys(cell, inputs)
            weights = ops.reshape(keys, (batch, time, cell.groups, cell.num_choices))
            groups = ["key"] if cell.groups == 1 else [f"key {gate}" for gate in GATES]
        results.append((layer.name, groups, ops.convert_to_numpy(weights)))
    return results


def mean_weight_per_token(tokens, weights):
    """The mean routing weight of each token type.

    Args:
        tokens: A list of strings, each a list of token names.
        weights: `(batch, time, groups, choices)` from `routing_weights`,
            row `b` holding string `b` from its first token.

    Returns:
        A dict `token -> (count, mean weights (groups, choices))`, in order
        of decreasing count.
    """
    sums, counts = {}, collections.Counter()
    for row, string in enumerate(tokens):
        for t, token in enumerate(string):
            sums[token] = sums.get(token, 0.0) + weights[row, t]
            counts[token] += 1
    return {token: (n, sums[token] / n) for token, n in counts.most_common()}


def table_rows(layer, groups, per_token):
    """Rows for a CSV: layer, group, token, count, winner, weight_0 .. weight_k-1."""
    rows = []
    for token, (count, mean) in per_token.items():
        for group_index, group in enumerate(groups):
            row = {"layer": layer, "group": group, "token": token, "count": count}
            row["winner"] = int(np.argmax(mean[group_index]))
            for choice, value in enumerate(mean[group_index]):
                row[f"weight_{choice}"] = round(float(value), 6)
            rows.append(row)
    return rows


def _shortened(token, longest=12):
    return token if len(token) <= longest else token[: longest - 1] + "…"


def plot(tokens, weights, groups, path, title, choice_name="cell", max_tokens=40):
    """Each token coloured by its winning cell or choice and shaded by its weight.

    One row per string and group; tokens after `max_tokens` are left out.
    """
    rows = [(s, g) for s in range(len(tokens)) for g in range(len(groups))]
    width = min(max_tokens, max(len(t) for t in tokens))
    tokens = [[_shortened(token) for token in string[:width]] for string in tokens]
    longest = max(len(token) for string in tokens for token in string)
    # Words are written upright in their boxes, so a row of 40 stays readable;
    # characters and brackets across, a longer mark among them upright.
    upright = np.median([len(token) for string in tokens for token in string]) > 2
    row_height = max(0.45, 0.075 * longest + 0.15) if upright else 0.45  # inches
    fig, ax = plots.figure(
        title,
        "token position",
        "string" if len(groups) == 1 else "string, key",
        height=1.2 + row_height * len(rows),
    )
    choices = weights.shape[-1]
    for y, (string, group) in enumerate(rows):
        for t, token in enumerate(tokens[string]):
            winner = int(np.argmax(weights[string, t, group]))
            shade = float(weights[string, t, group, winner])
            ax.add_patch(
                Rectangle(
                    (t, -y - 0.45),
                    0.95,
                    0.9,
                    facecolor=f"C{winner}",
                    alpha=shade,
                )
            )
            turned = upright or len(token) > 2  # e.g. <eos> among characters
            ax.text(
                t + 0.475,
                -y,
                token,
                ha="center",
                va="center",
                fontsize=7 if turned else 9,
                rotation=90 if turned else 0,
            )
    ax.set_xlim(0, width)
    ax.set_ylim(-len(rows) + 0.4, 0.6)
    ax.set_yticks([-y for y in range(len(rows))])
    ax.set_yticklabels(
        [f"{s + 1}" if len(groups) == 1 else f"{s + 1}, {groups[g]}" for s, g in rows]
    )
    ticks = range(0, width, max(1, width // 10))
    ax.set_xticks([t + 0.475 for t in ticks])
    ax.set_xticklabels([str(t) for t in ticks])
    ax.legend(
        handles=[
            Patch(color=f"C{c}", label=f"{choice_name} {c}") for c in range(choices)
        ],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        title="winner (shade: weight)",
        fontsize=8,
    )
    return plots.save(fig, path)


def analyze_routing(run_dirs, out, split, texts=(), samples=4):
    """Writes a figure per run and routed layer (`samples` strings of `split`,
    or `texts`) and a CSV per run; returns `{run name: table rows}`."""
    check_positive_int("--samples", samples)
    computed = []
    for run_dir, name in zip(run_dirs, run_names(run_dirs), strict=True):
        run = runs.load_run(run_dir)
        routed_layers(run.model)
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
        layers = routing_weights(run.model, padded)
        computed.append((name, run.recipe, tokens, layers))
    plots.make_out_dir(out)
    results = {}
    for name, recipe, tokens, layers in computed:
        rows = []
        for layer, groups, weights in layers:
            per_token = mean_weight_per_token(tokens, weights)
            rows += table_rows(layer, groups, per_token)
            plot(
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
