"""What the commands share: a parser that answers at once, and a quiet TensorFlow.

Importing Keras takes seconds, so a command (`python -m training.train`,
...) reads its arguments before it imports Keras or TensorFlow: `--help`
and a wrong argument answer at once. Its module imports at the top only the
standard library, this module and modules that import neither (`training`,
`training.core.backends`, `training.core.recipe_files`); what loads Keras is imported
inside the functions that use it. This module imports neither either, and
whatever a parser lists (recipes, tables, scales) comes from files or plain
constants. `tests/training/cli/command_line_test.py` checks every command's
`--help`.

`start_tensorflow()`, which a command calls once its arguments are read,
imports TensorFlow and finds its devices with its C++ log lines below
errors hidden (`TF_CPP_MIN_LOG_LEVEL=2`, `LOG_LEVEL`) unless the user set
`TF_CPP_MIN_LOG_LEVEL`. Two kinds of line ignore that variable, and it
filters them out of what is written to stderr while TensorFlow starts:

- the lines TensorFlow's libraries log while they load, before their
  logging reads the variable (absl writes everything to stderr until
  initialized: "WARNING: All log messages before absl::InitializeLog() ...",
  "oneDNN custom operations are on", "Could not find cuda drivers"): those
  below the level are dropped, as the variable asks;
- "E... cuda_platform.cc] failed call to cuInit": TensorFlow's Linux wheel
  is built with CUDA and initializes it when it looks for devices; on a
  machine without the NVIDIA driver the call always fails and XLA logs it
  as an error. It is dropped only when TensorFlow said in the same start
  that it found no CUDA driver (cudart_stub's "Could not find cuda
  drivers"), so on a machine with a driver a failing cuInit still shows.
  `TF_CPP_MIN_LOG_LEVEL=3` would hide it too, with every other error, and
  `CUDA_VISIBLE_DEVICES` does not stop the call (checked with TF 2.21).

Everything else passes, as it comes. `TF_CPP_MIN_LOG_LEVEL=0` shows every
line (nothing is filtered below the level).

It also imports them with Python's cyclic garbage collector paused, and
then moves what they made to the collector's permanent generation
(`gc.freeze`): the import makes about 700,000 objects that live as long as
the process and almost no garbage (a collection after it finds 0.6% of
them unreachable), yet each full collection during and after the import
scanned them all. That cost a command 1.2 s of its start (an import of 4.3
s took 3.1 s; the collection after it alone took 0.33 s) for 2.5 MB more
at its peak; measured in benchmarks/log.md, "Start-up".
"""

import argparse
import contextlib
import gc
import os
import re
import signal
import sys
import textwrap
import threading

from training.core import recipe_files, sigint

# TensorFlow's C++ log level of a command unless the user set one: errors only.
LOG_LEVEL = "2"
# A line of absl's log format: severity letter, date, time, thread, file:line].
_LOG_LINE = re.compile(r"([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\] ")
_ABSL_BANNER = "WARNING: All log messages before absl::InitializeLog() is called"
_NO_DRIVER = "Could not find cuda drivers on your machine"
_CUINIT = "failed call to cuInit"
_SEVERITIES = "IWEF"


def parser(prog, doc, examples, notes=None, **kwargs):
    """An `argparse.ArgumentParser` for the command `prog` (`python -m ...`).

    Args:
        prog: The command as typed: `"python -m training.train"`.
        doc: The command module's docstring; its first line is the
            description.
        examples: `(command line, what it does)` pairs, printed after the
            options under "examples:".
        notes: Text printed before the examples (a list of choices), as written.
        **kwargs: Passed on to `argparse.ArgumentParser`.
    """
    lines = ["examples:"]
    for command, what in examples:
        lines += [f"  {command}", f"      {what}"]
    epilog = "\n".join(lines) if notes is None else f"{notes}\n\n" + "\n".join(lines)
    return argparse.ArgumentParser(
        prog=prog,
        description=doc.strip().splitlines()[0],
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,
    )


def recipe_summary(path):
    """The one-line description of the recipe file at `path`: its `description`
    up to the first "; " (what follows is advice on its keys)."""
    try:
        description = recipe_files.read(path, "recipe", ValueError).get("description")
    except (ValueError, OSError):
        return "(cannot be read as TOML)"
    return str(description or "").split("; ")[0]


def recipe_list(default):
    """The recipes of `training/recipes/` with their descriptions, `default` marked."""
    names = recipe_files.available(recipe_files.RECIPE_DIR)
    width = max((len(name) for name in names), default=0)
    lines = ["recipes (training/recipes/NAME.toml):"]
    for name in names:
        summary = recipe_summary(recipe_files.RECIPE_DIR / f"{name}.toml")
        mark = "(default) " if name == default else ""
        lines.append(f"  {name:{width}}  {mark}{summary}")
    return "\n".join(lines)


def shard(text):
    """`--shard I/N` as `(I, N)`: an argparse `type`."""
    index, sep, count = text.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and int(count) > 0):
        raise argparse.ArgumentTypeError(f"expected I/N such as 0/2, received {text!r}")
    return int(index), int(count)


def table_list():
    """The tables of `training/tables/`, a wrapped paragraph for a --help."""
    names = ", ".join(recipe_files.available(recipe_files.TABLE_DIR))
    text = f"tables (training/tables/NAME.toml): {names}"
    return textwrap.fill(text, 79, subsequent_indent="  ")


class StartupFilter:
    """Which lines of TensorFlow's start keep, at C++ log level `level` (0-3).

    `keep(line)` is called on each line in order: it remembers whether
    TensorFlow said it found no CUDA driver (see the module's docstring).
    """

    def __init__(self, level):
        self.level = level
        self.no_driver = False

    def keep(self, line):
        if self.level < 1:
            return True
        if line.startswith(_ABSL_BANNER):
            return False
        match = _LOG_LINE.match(line)
        if match is None:
            return True
        self.no_driver = self.no_driver or _NO_DRIVER in line
        if _SEVERITIES.index(match.group(1)) < self.level:
            return False
        return not (self.no_driver and _CUINIT in line)


def log_level():
    """`TF_CPP_MIN_LOG_LEVEL` as TensorFlow reads it (0 when unset or not 0-3)."""
    text = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0").strip()
    return int(text) if text in ("0", "1", "2", "3") else 0


@contextlib.contextmanager
def filtered_stderr(keep):
    """Passes what is written to file descriptor 2 meanwhile through `keep(line)`.

    C++ libraries write there directly, bypassing `sys.stderr`. Each line is
    forwarded as soon as it is whole, so a crash loses nothing written before.
    """
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to filter
        yield
        return
    read_end, write_end = os.pipe()

    def forward():
        with open(read_end, "rb") as pipe:
            for line in pipe:
                if keep(line.decode(errors="replace")):
                    while line:
                        line = line[os.write(saved, line) :]

    thread = threading.Thread(target=forward, name="stderr filter", daemon=True)
    thread.start()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # closes the pipe's last writer: the thread ends
        thread.join(timeout=10)
        os.close(saved)


@contextlib.contextmanager
def deferred_interrupt():
    """Within the block a Ctrl-C (SIGINT) is only noted; it is raised as
    `KeyboardInterrupt` when the block ends.

    For the heavy imports of a command's start: a `KeyboardInterrupt` raised
    while TensorFlow's or JAX's extension modules initialize left them half
    made, and the process died of SIGSEGV or SIGABRT, or JAX's next import
    failed with a circular-import traceback (4 of 16 timed Ctrl-Cs). Only
    where Python's default handler or a command's (`sigint`) is in place, in
    the main thread.
    """
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous not in (
        signal.default_int_handler,
        sigint.note_and_raise,
    ):
        yield
        return
    signal.signal(signal.SIGINT, lambda signum, frame: sigint.note())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if sigint.noted():
        raise KeyboardInterrupt


def run(main):
    """Runs a command's `main()` as `python -m` does, with a Ctrl-C never
    lost (`training.core.sigint.install`); a `KeyboardInterrupt` that no
    `main` caught (a Ctrl-C as it reads its arguments) is one line on stderr
    and exit status 130, as every other interrupt of a command."""
    try:
        # A Ctrl-C noted while the command's modules loaded (training/__init__.py).
        handler = signal.getsignal(signal.SIGINT)
        noted = getattr(handler, "noted", None)
        if handler is signal.default_int_handler or noted is not None:
            sigint.install()  # not where the user's shell ignores SIGINT
        if noted:
            raise KeyboardInterrupt
        return main()
    except KeyboardInterrupt:
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        name = spec.name if spec is not None else "the command"
        sys.stderr.write(f"python -m {name}: interrupted\n")
        return 130
    finally:
        # The command has ended and chosen its status (its last line
        # written): a Ctrl-C still pending, or a second one, must not turn
        # exit 130 into a death by SIGINT (status -2) as Python shuts down.
        # (`signal.signal` first runs a handler already due: that one is
        # dropped, and the second call sets the ignoring.)
        if threading.current_thread() is threading.main_thread():
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            except KeyboardInterrupt:
                signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_tensorflow():
    """Imports TensorFlow and Keras and finds the devices, quietly (the
    module's docstring), with a Ctrl-C deferred until they are done
    (`deferred_interrupt`).

    Sets `TF_CPP_MIN_LOG_LEVEL` to `LOG_LEVEL` unless it is set. A command
    calls it once its arguments are read, before it imports anything that
    imports Keras; where TensorFlow is imported already (a test calling
    `main`) it only sets the default.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", LOG_LEVEL)
    if "tensorflow" in sys.modules:
        return
    with deferred_interrupt(), uncollected():
        with filtered_stderr(StartupFilter(log_level()).keep):
            import tensorflow as tf

            tf.config.list_physical_devices()
        import keras  # noqa: F401 (and its backend: JAX, where it runs on JAX)


@contextlib.contextmanager
def uncollected():
    """Runs its block with the cyclic garbage collector paused, then freezes
    what exists (`gc.freeze`: never scanned again) and resumes collecting
    (the module's docstring). A collector the caller paused stays paused."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
