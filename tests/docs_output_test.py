"""README.md's sample output of its first command is what that command prints.

The README shows what `python -m training.train` (the default recipe,
`dyck2_dyck_rnn`, at small scale) prints, and docs/evaluation.md shows the
valid split's report of the same run. The `processes` test runs the command
once, as documented, in a folder of its own, and compares each block with
its output:

- line structure: every line of a block is a line of the output, in order;
  `...` stands for one or more lines left out, and nothing else may be
  left out (a line the command stops or starts printing fails the test);
- exact: the epoch and step counts, the sequence counts, every WCPA and
  LDPA, every closing distance and its count of positions (they follow
  from the recipe's seeds: the data is drawn with NumPy, and the Dyck model
  learns the task to 1.0000), the XLA and steps-per-execution decisions
  (they follow from the recipe and the device: these tests run on a CPU)
  and the paths;
- shape only: an epoch line's `loss` and `val_loss` (a number; the float
  arithmetic of training differs across CPUs in the last digits) and its
  times (`0s`, `14ms/step`: they depend on the machine's load).

Regenerate the blocks from a real run when the command's output changes.

docs/tuning.md's example search takes over a minute and its `val_loss`
varies in the third decimal between runs, so it is not rerun here: its block
says when and how it was generated, and a default-run test checks that its
table is what the search's formatter (`tuning.search_records.format_table`) makes
of that run's recorded trials, and that its best-trial line names the best.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tuning import search_records

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EVALUATION = ROOT / "docs/evaluation.md"
GAP = "..."
EPOCH_LINE = re.compile(r"^\d+/\d+ - ")
TIME = re.compile(r"\b\d+(?:\.\d+)?(?:us|ms|s)(?=/step\b| |$)")
LOSS = re.compile(r"\b((?:val_)?loss: )(\S+)")


def shape(line):
    """A line with what is compared only in shape replaced by a placeholder.

    Raises `ValueError` when a loss is not a number.
    """
    if not EPOCH_LINE.match(line):
        return line
    for _, value in LOSS.findall(line):
        float(value)  # a ValueError when the loss is not a number
    return LOSS.sub(r"\1<loss>", TIME.sub("<time>", line))


def mismatch(block, output):
    """Why `block` (lines, `...` for a gap of one or more lines) is not
    `output` (lines), or None when it is."""
    try:
        output = [shape(line) for line in output]
        block = [line if line == GAP else shape(line) for line in block]
    except ValueError as error:
        return f"a loss that is not a number: {error}"

    def match(b, o):  # block[b:] against output[o:]: None, or (b reached, why)
        if b == len(block):
            return None if o == len(output) else (b, f"output goes on: {output[o]!r}")
        if block[b] == GAP:
            if o == len(output):
                return b, "`...` at the end of the output"
            tries = [match(b + 1, start) for start in range(o + 1, len(output) + 1)]
            if None in tries:
                return None
            return max(
                tries, key=lambda failure: failure[0]
            )  # the one that got furthest
        if o == len(output):
            return b, f"output ends before {block[b]!r}"
        if block[b] != output[o]:
            return b, f"documented {block[b]!r}, printed {output[o]!r}"
        return match(b + 1, o + 1)

    failure = match(0, 0)
    return None if failure is None else failure[1]


def text_blocks(path):
    """The plain ``` blocks (no language) of a Markdown file, as lines."""
    blocks, block, language = [], None, None
    for line in path.read_text().splitlines():
        if block is None and line.startswith("```"):
            block, language = [], line[3:].strip()
        elif block is not None and line == "```":
            if not language:
                blocks.append(block)
            block = None
        elif block is not None:
            block.append(line)
    return blocks


def readme_block():
    """The README's sample output of `python -m training.train`."""
    blocks = [b for b in text_blocks(README) if any(" 20/20" in x for x in b)]
    assert len(blocks) == 1, blocks
    return blocks[0]


def evaluation_block():
    """docs/evaluation.md's report of the README run's valid split, with a
    leading gap: in the train command's output it follows the epochs."""
    command = "$ python -m training.evaluate runs/dyck2_dyck_rnn-small --split valid"
    blocks = [b for b in text_blocks(EVALUATION) if b[0] == command]
    assert len(blocks) == 1, blocks
    return [GAP, *blocks[0][1:]]


def test_mismatch_compares_counts_and_lines_exactly_and_losses_and_times_in_shape():
    printed = [
        "Epoch 1/2",
        "15/15 - 1s - 9ms/step - loss: 0.0123 - val_loss: 2.5e-04 - wcpa: 1.0",
        "Epoch 2/2",
        "15/15 - 0s - 28ms/step - loss: 2.8365e-04 - val_loss: 3.5651e-04 - wcpa: 1.0",
        "  distance      LDPA  positions",
        "         1    1.0000       1523",
        "         3    1.0000        387",
        "run directory: runs/x",
    ]
    documented = [
        GAP,
        "15/15 - 2s - 16ms/step - loss: 1.8152e-04 - val_loss: 0.0010 - wcpa: 1.0",
        "  distance      LDPA  positions",
        "         1    1.0000       1523",
        GAP,
        "run directory: runs/x",
    ]
    assert mismatch(documented, printed) is None
    assert mismatch(printed, printed) is None
    stale = [
        {1: "16/16 - 0s - 16ms/step - loss: 1.8152e-04 - val_loss: 1 - wcpa: 1.0"},
        {1: documented[1].replace("wcpa: 1.0", "wcpa: 0.9")},
        {1: documented[1].replace("loss: 1.8152e-04", "loss: nan?")},
        {3: "         1    1.0000        804"},
        {5: "run directory: runs/y"},
    ]
    for change in stale:
        edited = [change.get(index, line) for index, line in enumerate(documented)]
        assert mismatch(edited, printed) is not None, change
    assert (
        mismatch(documented, [*printed, "SavedModel: runs/x"]) is not None
    )  # a new line
    assert mismatch(printed[:-1], printed) == "output goes on: 'run directory: runs/x'"
    assert mismatch(documented[1:], printed) is not None  # the leading gap dropped
    assert mismatch(documented[:1] + documented[2:], printed) is None  # gap covers it
    without_gap = documented[:4] + documented[5:]
    assert "printed '         3" in mismatch(without_gap, printed)


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory):
    """The stdout lines of the README's first command, run once in a folder
    of its own (its runs/ folder goes there)."""
    folder = tmp_path_factory.mktemp("readme-run")
    environment = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "training.train"],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


@pytest.mark.processes
def test_readme_sample_output_is_what_the_first_command_prints(readme_run):
    reason = mismatch(readme_block(), readme_run)
    assert reason is None, f"README.md's sample output is stale: {reason}"


@pytest.mark.processes
def test_evaluation_page_counts_are_the_readme_runs_valid_report(readme_run):
    reason = mismatch(evaluation_block(), readme_run)
    assert reason is None, f"docs/evaluation.md's valid report is stale: {reason}"


# The trials of docs/tuning.md's example search, as `trial_rows` gave them
# on 2026-11-27 (scores from each trial's trial.json).
TUNING_TRIALS = [
    ("0", "mlstm", None, 0.0004759832850429873, 31, 10_013, 0.35002192854881287),
    ("1", "mmlstm", 2, 0.000423211524914779, 27, 10_058, 0.3404370844364166),
    ("2", "mlstm", None, 0.005995204010597745, 31, 10_013, 0.22582599520683289),
    ("3", "mmlstm", 4, 0.0008033537310720251, 20, 10_101, 0.33216121792793274),
]


def test_tuning_page_table_is_the_search_formatter_on_its_recorded_trials():
    names = ("cell", "num_choices", "learning_rate", "units", "parameters")
    rows = [
        {
            "trial": trial,
            "status": "completed",
            **dict(zip(names, values, strict=True)),
            "val_loss": loss,
        }
        for trial, *values, loss in TUNING_TRIALS
    ]
    table = search_records.format_table(rows).splitlines()
    blocks = [b for b in text_blocks(ROOT / "docs/tuning.md") if table[0] in b]
    assert len(blocks) == 1, blocks
    block = blocks[0]
    start = block.index(table[0])
    assert block[start : start + len(table)] == table
    best = min(rows, key=lambda row: row["val_loss"])
    assert (
        f"Best trial {best['trial']}: val_loss {best['val_loss']:.4g}, "
        in "\n".join(block)
    )
