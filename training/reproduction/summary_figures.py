"""The figures of REPRODUCTION.md, each from the records with its CSV.

Each `Figure` holds the rows behind it (`data`, CSV text, written beside
the PNG and compared by the tests) and draws itself with
`training.core.plots`. Everything is read from the table sections' summaries,
the records, the presets' cards and benchmarks/README.md's peers table: no
number is listed here.
"""

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

import zoo
from training.core import plots
from training.reproduction import records, table_baselines, table_schema

DYCK_EXCESS = "test.excess_over_oracle"
MALI_TABLES = ("mali_d2_tuned", "mali_d3_tuned")
PEERS = ("zoo XLA tf.data", "zoo default", "Keras on JAX", "torch nn.LSTM")
PEERS_BEGIN, PEERS_END = "<!-- peers table -->", "<!-- end peers table -->"


@dataclass
class Figure:
    name: str
    title: str
    alt: str
    rows: list
    plot: object

    @property
    def data_name(self):
        return self.name.replace(".png", ".csv")

    @property
    def data(self):
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(self.rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.rows)
        return out.getvalue()

    def draw(self, path):
        fig = self.plot(self)
        plots.save(fig, path)


def figures(root, results_dir, summaries):
    """The figures, from `(table, summary)` of the current pages' sections."""
    found = [
        _learned(summaries),
        _excess(results_dir, summaries),
        _mali(results_dir, summaries),
        _speed(root),
        _presets(root),
    ]
    return [figure for figure in found if figure.rows]


def _seed_values(results_dir, table, key):
    values = {}
    for result in records.read_table_records(results_dir, table):
        value = table_schema.metric_value(result["metrics"], key)
        if value is not None:
            values.setdefault(result["row"], []).append((result["seed"], value))
    return values


def _learned(summaries):
    cells = set(zoo.available_cells())  # the heat map's rows
    best = {}
    for table, summary in summaries:
        language_of = table_baselines.recognition_data(table)
        for row in summary["rows"]:
            learned = row.get("learned")
            if row["name"] not in cells or not learned or not learned["n"]:
                continue
            language = language_of[row["name"]][0]
            key = (row["name"], str(language))
            if key not in best or learned["n"] > best[key]["seeds"]:
                best[key] = {
                    "cell": row["name"],
                    "language": str(language),
                    "table": table.name,
                    "learned": learned["learned"],
                    "seeds": learned["n"],
                }
    rows = sorted(best.values(), key=lambda r: (r["cell"], r["language"]))
    return Figure(
        "learned-the-stack.png",
        "Learned the stack: seeds per cell and language",
        "heat map of how many seeds of each cell learned the stack on D2, D3, D6 "
        "and palindromes",
        rows,
        _plot_learned,
    )


def _plot_learned(figure):
    cells = sorted({r["cell"] for r in figure.rows})
    languages = sorted({r["language"] for r in figure.rows})
    fig, ax = plots.figure(
        figure.title,
        "language",
        "cell",
        height=1.2 + 0.35 * len(cells),
        source="learned: strict accuracy on positive test strings at the bar of "
        "table_baselines.learned; each cell's table with the most seeds",
    )
    grid = [[float("nan")] * len(languages) for _ in cells]
    for r in figure.rows:
        i, j = cells.index(r["cell"]), languages.index(r["language"])
        grid[i][j] = r["learned"] / r["seeds"]
        ax.text(j, i, f"{r['learned']}/{r['seeds']}", ha="center", va="center")
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(languages)), languages)
    ax.set_yticks(range(len(cells)), cells)
    fig.colorbar(image, ax=ax, label="share of seeds that learned the stack")
    return fig


def _excess(results_dir, summaries):
    rows = []
    for table, _ in summaries:
        if DYCK_EXCESS not in {m.key for m in table.metrics}:
            continue
        values = _seed_values(results_dir, table, DYCK_EXCESS)
        for row in table.rows:
            recipe = table_schema.make_run(table, row, 0, "unused").recipe
            m = getattr(recipe.task, "m", None)
            for seed, value in values.get(row.name, []):
                rows.append(
                    {
                        "table": table.name,
                        "row": row.name,
                        "model": f"{table.name}: " + re.sub(r"_m\d+", "", row.name),
                        "m": m,
                        "seed": seed,
                        "excess_nats": value,
                    }
                )
    return Figure(
        "dyck-excess-over-oracle.png",
        "Dyck language models: test excess over the generator's floor",
        "excess cross-entropy over the oracle by m for each Dyck language model, "
        "one dot a seed",
        [r for r in rows if r["m"] is not None],
        _plot_excess,
    )


def _plot_excess(figure):
    fig, ax = plots.figure(
        figure.title, "m (bracket depth bound)", "excess (nats/token)"
    )
    models = sorted({r["model"] for r in figure.rows})
    for k, model in enumerate(models):
        mine = [r for r in figure.rows if r["model"] == model]
        offset = (k - (len(models) - 1) / 2) * 0.08
        ax.scatter(
            [r["m"] + offset for r in mine],
            [r["excess_nats"] for r in mine],
            s=14,
            marker="os^v"[k // 10 % 4],  # ten colours, then another marker
            label=model,
        )
    ax.set_yscale("log")
    ax.legend(fontsize=7, ncols=2)
    return fig


def _paper_mean(row, key):
    paper = row.paper.get(key, {})
    return paper.get("mean") if isinstance(paper, dict) else paper


def _paper_columns(table):
    """The table's metrics with the paper's means, each printed column once
    (a table shows one paper column beside several of ours)."""
    columns, seen = [], set()
    for metric in table.metrics:
        column = tuple(_paper_mean(row, metric.key) for row in table.rows)
        if any(value is not None for value in column) and column not in seen:
            seen.add(column)
            columns.append(metric)
    return columns


def _mali(results_dir, summaries):
    rows = []
    for table, _ in summaries:
        if table.name not in MALI_TABLES:
            continue
        for metric in _paper_columns(table):
            values = _seed_values(results_dir, table, metric.key)
            for row in table.rows:
                cell = {"table": table.name, "metric": metric.label, "row": row.name}
                for seed, value in values.get(row.name, []):
                    rows.append(
                        {
                            **cell,
                            "source": "ours",
                            "seed": seed,
                            "value": value * metric.factor,
                        }
                    )
                paper = _paper_mean(row, metric.key)
                if paper is not None:
                    rows.append(
                        {**cell, "source": "paper mean", "seed": "", "value": paper}
                    )
    return Figure(
        "mali-paper-against-ours.png",
        "Mali et al. 2020, Tables 4 and 5: the paper's means against our seeds",
        "the paper's mean per row against each of our seeds, D2 and D3, on the "
        "training set and the test set",
        rows,
        _plot_mali,
    )


def _plot_mali(figure):
    panels = list(dict.fromkeys((r["table"], r["metric"]) for r in figure.rows))
    fig, axes = plots.figure(figure.title, rows=len(panels), height=2.8 * len(panels))
    axes = axes if isinstance(axes, list) else [axes]
    for ax, (name, label) in zip(axes, panels, strict=True):
        mine = [r for r in figure.rows if (r["table"], r["metric"]) == (name, label)]
        names = list(dict.fromkeys(r["row"] for r in mine))
        ours = [r for r in mine if r["source"] == "ours"]
        paper = [r for r in mine if r["source"] != "ours"]
        ax.scatter(
            [names.index(r["row"]) for r in ours],
            [r["value"] for r in ours],
            s=12,
            alpha=0.6,
            label="ours, one dot a seed",
        )
        ax.scatter(
            [names.index(r["row"]) for r in paper],
            [r["value"] for r in paper],
            marker="_",
            s=300,
            color="black",
            label="paper's mean",
        )
        ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
        ax.set_title(f"{name}: {label}")
        ax.set_ylabel("accuracy (%)")
        ax.set_xlabel("row")
        ax.legend(fontsize=7)
    return fig


def peers_table(root):
    """The latest peers table of benchmarks/README.md: one dict a cell."""
    text = (Path(root) / "benchmarks" / "README.md").read_text()
    if PEERS_BEGIN not in text or PEERS_END not in text:
        raise table_schema.TableError(
            f"benchmarks/README.md has no {PEERS_BEGIN!r} ... {PEERS_END!r} block; "
            "expected the latest peers.py table between them."
        )
    block = text.split(PEERS_BEGIN, 1)[1].split(PEERS_END, 1)[0]
    rows, shape, units = [], None, []
    for line in block.splitlines():
        if re.match(r"^\w+: lstm, batch", line):
            shape = line.split(":")[0]
        elif line.startswith("units "):
            units = [int(u) for u in line.split()[1:]]
        elif shape and line.startswith(PEERS):
            name = next(p for p in PEERS if line.startswith(p))
            # two decimals each: columns may touch ("26.41109.86 / 109.85")
            cells = re.findall(r"(\d+\.\d\d) / *(\d+\.\d\d)", line[len(name) :])
            if len(cells) != len(units):
                continue  # a row not run ("-")
            for width, (wall, cpu) in zip(units, cells, strict=True):
                rows.append(
                    {
                        "shape": shape,
                        "row": name,
                        "units": width,
                        "ms_wall": float(wall),
                        "ms_cpu": float(cpu),
                    }
                )
    return rows


def _speed(root):
    return Figure(
        "speed-against-peers.png",
        "Training step time against PyTorch and JAX, by width",
        "milliseconds of CPU per training step by units for the zoo, Keras on JAX "
        "and PyTorch's nn.LSTM",
        peers_table(root),
        _plot_speed,
    )


def _plot_speed(figure):
    shapes = list(dict.fromkeys(r["shape"] for r in figure.rows))
    fig, axes = plots.figure(
        figure.title,
        rows=len(shapes),
        height=3 * len(shapes),
        source="benchmarks/README.md, peers.py (latest)",
    )
    axes = axes if isinstance(axes, list) else [axes]
    for ax, shape in zip(axes, shapes, strict=True):
        for name in dict.fromkeys(r["row"] for r in figure.rows if r["shape"] == shape):
            mine = [r for r in figure.rows if r["shape"] == shape and r["row"] == name]
            ax.plot(
                [r["units"] for r in mine],
                [r["ms_cpu"] for r in mine],
                "o-",
                color=f"C{PEERS.index(name)}",  # one colour a row in both panels
                label=name,
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(shape)
        ax.set_xlabel("units")
        ax.set_ylabel("CPU time (ms/step)")
        ax.legend(fontsize=7)
    return fig


def _presets(root):
    rows = []
    for card_path in sorted((Path(root) / "zoo" / "presets").glob("*/card.json")):
        card = json.loads(card_path.read_text())
        remeasure, table = card.get("remeasure") or {}, card.get("table") or {}
        key = remeasure.get("metric")
        if key is None or remeasure.get("value") is None:
            continue
        factor, label = 1.0, f"{key} (as recorded)"
        try:
            metric = next(
                m
                for m in table_schema.load_table(table["name"]).metrics
                if m.key == key
            )
            factor, label = metric.factor, metric.label
        except (KeyError, StopIteration, table_schema.TableError):
            pass
        target = (table.get("paper") or {}).get(key) or {}
        target = (
            target.get("mean", target.get("best"))
            if isinstance(target, dict)
            else target
        )
        rows.append(
            {
                "preset": card["name"],
                "metric": label,
                "score": remeasure["value"] * factor,
                "target": target,
            }
        )
    return Figure(
        "presets-against-targets.png",
        "Presets: score against the paper's published number",
        "each preset's measured score beside its paper's published number, where "
        "the paper gives one",
        rows,
        _plot_presets,
    )


def _plot_presets(figure):
    fig, axes = plots.figure(
        figure.title, rows=len(figure.rows), height=1.0 + 0.9 * len(figure.rows)
    )
    axes = axes if isinstance(axes, list) else [axes]
    for ax, r in zip(axes, figure.rows, strict=True):
        ax.scatter([r["score"]], [0], color="tab:blue", label="preset's score")
        if r["target"] not in (None, ""):
            ax.axvline(float(r["target"]), color="black", label="published")
        ax.set_yticks([])
        ax.set_xlabel(r["metric"], fontsize=7)
        ax.set_ylabel(r["preset"], rotation=0, ha="right", fontsize=7)
        ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig
