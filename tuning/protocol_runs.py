"""Tuning protocols: one search per row, with one search space and budget.

A protocol (`PROTOCOLS`) names a recipe, a scale, its rows (a row searches
one cell) and the `python -m tuning.search` arguments every row shares, so
that each row gets the same trials, seeds per trial and search space; an
option a row's cell does not take is dropped for that row by the search's
conditional options. Each row's search runs in DIR/NAME/ROW (Keras Tuner's
files, checkpoints included) and copies its record (summary.txt,
trials.json, zoo_search.json, Keras Tuner's state in keras_tuner/ and, once
the row has ended, best_recipe.toml: small text files) to FOLDER/NAME/ROW
after every trial. The rows run one after another (`run_rows`), each a
`python -m tuning.search` process with its own TensorFlow threads (its
output goes to this one's); `kill` (SIGTERM) or Ctrl-C stops the row's
search too. Running the same rows again resumes: finished rows end at once,
an interrupted one goes on from its last finished trial, also on a machine
without DIR (the search restores Keras Tuner's state from the record).
Disjoint rows in two processes share the work.

This module imports neither TensorFlow nor Keras: each search runs in a
process of its own.
"""

import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

from training.core import sigint


@dataclasses.dataclass(frozen=True)
class Protocol:
    """A search protocol: what every row of it shares.

    Attributes:
        recipe: The recipe every row searches.
        scale: Its scale.
        rows: `{row name: cell}`.
        arguments: `python -m tuning.search` arguments every row shares.
        max_trials: Trials per row (default of `--max-trials`).
        seeds_per_trial: Models per trial (default of `--seeds-per-trial`).
        description: What it searches and why, one paragraph.
    """

    recipe: str
    scale: str
    rows: dict
    arguments: tuple
    max_trials: int
    seeds_per_trial: int
    description: str


# The recognition rows of Mali et al.'s tables that have a stack or gates to
# tune, and the LSTM and GRU baselines (docs/stack-training.md, "One tuning
# protocol"). The forget-gate bias is `unit_forget_bias` (0 or 1) for Keras's
# LSTM cell and the DiffStk-LSTM's, `forget_bias` for the DiffStk-MLSTM: the
# same two values for each gated cell. The stack depth stays the recipe's 64.
# The searches start from the paper's settings (the `_paper` recipes); the
# recipes without the suffix ship what they chose.
STACK_D2 = Protocol(
    recipe="recognition_d2_diffstk_rnn_paper",
    scale="paper",
    rows={
        "stack_rnn": "stack_rnn",
        "diffstk_rnn": "diffstk_rnn",
        "diffstk_mrnn": "diffstk_mrnn",
        "diffstk_mirnn": "diffstk_mirnn",
        "diffstk_lstm": "diffstk_lstm",
        "diffstk_mlstm": "diffstk_mlstm",
        "lstm": "lstm",
        "gru": "gru",
    },
    arguments=(
        "--tuner",
        "random",
        "--units",
        "8",
        "--num-layers",
        "1",
        "--dropout",
        "0",
        "--learning-rate",
        "5e-4,3e-2",
        "--option",
        "stack_depth=64",
        "--option",
        "stack_width=1,3,5,8",
        "--option",
        "read_depth=1,2,3",
        "--option",
        "noise_stddev=0,0.05,0.1,0.2",
        "--option",
        "carry_forward=soft,hard,false",
        "--option",
        "forget_bias=0,1",
        "--option",
        "unit_forget_bias=false,true",
        "--option",
        "task.next_symbol_loss=all,positives",
    ),
    max_trials=12,
    seeds_per_trial=2,
    description=(
        "D2 recognition at the paper's budget (30 epochs, 8 units, one layer), "
        "scored by strict accuracy on the validation split's positive strings "
        "(never test): learning rate, forget-gate bias (gated cells), state "
        "noise and carry-forward (DiffStk cells), stack element width and read "
        "depth (stack cells), and the strings the next-symbol loss trains on."
    ),
)

# The second-order report's m = 4 Dyck-2 language model, LSTM row (issue
# "Dyck language models measured against the oracle", item 3): what brings
# the LSTM to the generator's floor on today's data. The batch size (10, the
# report's) decides the data a search shares, so it stays fixed.
DYCK_M4 = Protocol(
    recipe="dyck2_lstm",
    scale="paper",
    rows={"lstm": "lstm"},
    arguments=(
        "--tuner",
        "random",
        "--units",
        "12,24,48",
        "--num-layers",
        "1",
        "--dropout",
        "0",
        "--learning-rate",
        "1e-4,1e-2",
        "--option",
        "train.early_stopping_patience=6,20",
        "--option",
        "train.reduce_lr_patience=3,10",
    ),
    max_trials=10,
    seeds_per_trial=1,
    description=(
        "m = 4 Dyck-2 language modelling at the report's data and budget (10,000 "
        "training strings, batch 10, up to 200 epochs), scored by validation "
        "cross-entropy (never test), whose floor is the validation oracle's: "
        "learning rate, hidden size (the report's 3m = 12 and above), and how "
        "long the run waits before halving the rate or stopping."
    ),
)

# Palindromes (Mali et al.'s Table 7) on their own validation split: the
# D2 searches' recipes learned the stack in no palindrome run (REPRODUCTION.md),
# so this is STACK_D2 with only the language changed, the intervention that
# says whether the search's D2-only scoring is the cause.
STACK_PALINDROME = dataclasses.replace(
    STACK_D2,
    recipe="recognition_palindrome_diffstk_rnn_paper",
    description=STACK_D2.description.replace(
        "D2 recognition", "Palindrome recognition"
    ),
)

PROTOCOLS = {
    "stack_d2": STACK_D2,
    "stack_palindrome": STACK_PALINDROME,
    "dyck_m4": DYCK_M4,
}


def row_arguments(
    name,
    row,
    overrides=(),
    max_trials=None,
    seeds_per_trial=None,
    directory="runs/tuning",
    record="results/tuning",
):
    """The `python -m tuning.search` arguments of protocol `name`'s `row`."""
    protocol = PROTOCOLS[name]
    return [
        "--recipe",
        protocol.recipe,
        *overrides,
        "--scale",
        protocol.scale,
        "--cells",
        protocol.rows[row],
        *protocol.arguments,
        "--max-trials",
        str(protocol.max_trials if max_trials is None else max_trials),
        "--seeds-per-trial",
        str(protocol.seeds_per_trial if seeds_per_trial is None else seeds_per_trial),
        "--directory",
        str(Path(directory) / name),
        "--project-name",
        row,
        "--record",
        str(Path(record) / name / row),
    ]


def search_commands(
    name,
    rows=None,
    overrides=(),
    max_trials=None,
    seeds_per_trial=None,
    directory="runs/tuning",
    record="results/tuning",
    verbose=2,
):
    """`{row: python -m tuning.search arguments}` of protocol `name`'s `rows`
    (default: every row), each with `--verbose`; a one-line `ValueError`
    names rows the protocol lacks."""
    protocol = PROTOCOLS[name]
    rows = list(protocol.rows) if rows is None else rows
    unknown = [row for row in rows if row not in protocol.rows]
    if unknown:
        raise ValueError(
            f"unknown row(s) {', '.join(unknown)} of protocol {name!r}; expected "
            f"some of: {', '.join(protocol.rows)}."
        )
    return {
        row: row_arguments(
            name, row, overrides, max_trials, seeds_per_trial, directory, record
        )
        + ["--verbose", str(verbose)]
        for row in rows
    }


def run_rows(name, commands, threads, record, report):
    """Runs each row's search of `search_commands` in turn, with `threads`
    TensorFlow threads; `report(line)` is told as each row starts, and at the
    end how many rows were searched and where their records are (`record`).

    Returns:
        The exit status: 130 if a search was stopped (Ctrl-C, SIGTERM), which
        ends the rows; 1 if a row's search failed; else 0.
    """
    environment = dict(os.environ)
    for variable in (
        "TF_NUM_INTRAOP_THREADS",
        "TF_NUM_INTEROP_THREADS",
        "OMP_NUM_THREADS",
    ):
        environment[variable] = str(threads)
    rows, failed = list(commands), []
    for row, arguments in commands.items():
        report(f"\n== {name}: row {row} ({rows.index(row) + 1} of {len(rows)})")
        status = run_search(arguments, environment)
        if status in (130, -signal.SIGINT, -signal.SIGTERM):
            report(f"\nStopped in row {row}; the same command resumes.")
            return 130
        if status:
            failed.append(f"{row} (status {status})")
    report(
        f"\n{name}: {len(rows) - len(failed)} of {len(rows)} rows searched"
        + (f"; not finished: {', '.join(failed)}" if failed else "")
        + f". Records in {Path(record) / name}."
    )
    return 1 if failed else 0


STOPS = sigint.STOPS  # passed on to a row's search


def run_search(arguments, environment):
    """Runs `python -m tuning.search arguments`; returns its exit status.

    A SIGTERM or SIGINT to this process is passed on to the search, so a
    killed driver leaves no search running and `kill -INT` to the driver
    alone stops the search as Ctrl-C does; the search's status then says so.
    The search runs in a process group of its own, so a Ctrl-C at the
    terminal reaches it once, through this process.
    """
    command = [sys.executable, "-m", "tuning.search", *arguments]

    def stop(signum, frame):
        if child is None:  # not started yet
            raise KeyboardInterrupt
        # Not `child.wait()` here: the interrupted wait holds its lock.
        child.send_signal(signum)

    child = None
    with sigint.handling(STOPS, stop):
        child = subprocess.Popen(command, env=environment, process_group=0)
        return child.wait()
