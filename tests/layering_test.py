"""The shape of the house, read from the source with `ast` (nothing is imported).

- Floors: every module of `zoo`, `training` and `tuning` stands on one floor
  of `FLOORS`, and imports only modules of its own floor or of the floors
  below it; no module imports a command (`COMMANDS`).
- The folders show the floors: each package of `training` stands whole on
  one floor, and `training/`'s top level holds only its commands,
  `__init__.py` and packages.
- The fit path (`FIT_PATH`) knows a task only by the protocol declared on
  its own floor (`TASK_PROTOCOL`): it imports that and no module of the
  tasks floor.
- Private names stay in their module: no `from x import _y`, no `x._y` on
  an imported module.
- No module of `PACKAGES` is over `MAX_LINES` lines, and no command (a
  module that runs as `python -m`) over `COMMAND_MAX_LINES`: a command
  parses its arguments, calls library functions and prints.
- No two modules of `PACKAGES` share a file name (`__init__.py` aside), as
  keras-hub's files do not: a name says which file it is wherever it is
  shown (a traceback, an editor's tab, a search result).
- A command imports nothing that loads Keras before its arguments are read:
  what its module imports when it is run, and what those modules import
  in turn, reaches no module of `LOADS_KERAS` (`--help` answers at once;
  tests/training/cli/command_line_test.py runs each).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAINING = ROOT / "training"
PACKAGES = ("zoo", "training", "tuning")
MAX_LINES = 500
COMMAND_MAX_LINES = 120
MAIN_GUARD = 'if __name__ == "__main__":'

# The commands (`python -m ...`): each has a `__main__` guard, and no module
# imports one (a command is a thin layer over library functions).
COMMANDS = (
    "training.train",
    "training.evaluate",
    "training.export",
    "training.generate",
    "training.analyze",
    "training.syntax",
    "training.reproduce",
    "training.preset",
    "training.migrate",
    "tuning.search",
    "tuning.protocol",
)

# Bottom to top: (floor, what stands on it, its modules). A module may import
# its own floor or a floor below. "pkg.*" is a package and every module in it.
FLOORS = (
    ("zoo", "the model library: cells, layers, builders, presets", ("zoo.*",)),
    ("data", "generating and reading data; no model", ("training.data.*",)),
    (
        "core",
        "what a task and a fit are made of: the recipe loader and training "
        "options, metrics, callbacks, compiled scoring, the compile-and-fit path",
        ("training", "training.core.*"),
    ),
    (
        "tasks",
        "one class per task kind: its recipe section, data, model, evaluation; "
        "the recipes of those kinds",
        ("training.tasks.*",),
    ),
    (
        "runs",
        "a run directory: training into one, loading, evaluating, sampling "
        "from and exporting it",
        ("training.runs.*",),
    ),
    (
        "reproduction",
        "the papers' tables over seeds: schema, runs, records, summaries; presets",
        ("training.reproduction.*",),
    ),
    ("analysis", "the papers' analyses of trained models", ("training.analysis.*",)),
    (
        "tuning",
        "the tuner: hypermodels, the search space, tuners and their records, protocols",
        (
            "tuning",
            "tuning.search_space",
            "tuning.hypermodels",
            "tuning.search_records",
            "tuning.tuner_files",
            "tuning.tuners",
            "tuning.protocol_runs",
        ),
    ),
    (
        "commands",
        "the CLIs and what they share",
        (*COMMANDS, "training.cli.*"),
    ),
)
# Packages whose import takes seconds: a command imports them, and the
# modules of ours that do, inside the functions that use them.
LOADS_KERAS = ("keras", "tensorflow", "tensorflow_text", "keras_tuner", "jax")

# The compile-and-fit path, and the protocol of what it needs from a task.
FIT_PATH = ("training.core.fitting", "training.core.compile_mode")
TASK_PROTOCOL = "training.core.task_protocol"


def modules():
    """`{dotted name: path}` of every module of `PACKAGES`."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = modules()


def floor_of(module):
    """The index in `FLOORS` of the one floor `module` stands on."""
    floors = [
        index
        for index, (_, _, members) in enumerate(FLOORS)
        for member in members
        if member == module
        or member.endswith(".*")
        and (module == member[:-2] or module.startswith(member[:-1]))
    ]
    assert len(set(floors)) == 1, f"{module} stands on floors {floors} of FLOORS"
    return floors[0]


def imports(module):
    """`(line, imported module, names taken from it)` of each import in `module`."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from `package`, up `level - 1` packages
                parts = package.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in MODULES:  # `from package import module`
                    found.append((node.lineno, submodule, ()))
                else:
                    found.append((node.lineno, base, (alias.name,)))
    return found


def own(module):
    return module.split(".")[0] in PACKAGES


def is_private(name):
    return name.startswith("_") and not name.startswith("__")


def test_every_command_has_a_main_guard_and_only_commands_do():
    guarded = {
        module for module, path in MODULES.items() if MAIN_GUARD in path.read_text()
    }
    assert guarded == set(COMMANDS)


def test_modules_import_only_their_own_floor_or_below_and_no_command():
    wrong = []
    for module in MODULES:
        floor = floor_of(module)
        for line, imported, _ in imports(module):
            if not own(imported) or imported == module:
                continue
            where = f"{MODULES[module].relative_to(ROOT)}:{line}"
            if imported in COMMANDS:
                wrong.append(f"{where} imports the command {imported}")
            elif floor_of(imported) > floor:
                wrong.append(
                    f"{where} ({FLOORS[floor][0]}) imports {imported} "
                    f"({FLOORS[floor_of(imported)][0]}), a floor above"
                )
    assert not wrong, "\n".join(wrong)


def test_each_package_of_training_stands_whole_on_one_floor():
    whole = {member[:-2] for _, _, members in FLOORS for member in members}
    packages = sorted(
        f"training.{path.parent.name}" for path in TRAINING.glob("*/__init__.py")
    )
    split = [package for package in packages if package not in whole]
    assert not split, f"not named whole (PACKAGE.*) on a floor of FLOORS: {split}"


def test_the_top_level_of_training_holds_only_commands_and_packages():
    commands = {name.split(".")[1] for name in COMMANDS if name.startswith("training.")}
    loose = sorted(
        path.name
        for path in TRAINING.glob("*.py")
        if path.stem not in commands | {"__init__"}
    )
    assert not loose, (
        f"modules at training/'s top level that are not commands: {loose}; "
        "expected each in the package of its floor (training/FLOOR/)"
    )
    # A folder of modules is a package; recipes/ and tables/ hold TOML files.
    folders = sorted(
        path.name
        for path in TRAINING.iterdir()
        if path.is_dir() and any(path.rglob("*.py"))
        if not (path / "__init__.py").is_file()
    )
    assert not folders, f"folders of modules without an __init__.py: {folders}"


def test_the_fit_path_knows_a_task_only_by_its_protocol():
    tasks = next(i for i, (name, _, _) in enumerate(FLOORS) if name == "tasks")
    assert floor_of(TASK_PROTOCOL) == floor_of("training.core.fitting") < tasks
    wrong = []
    for module in FIT_PATH:
        imported = {name for _, name, _ in imports(module)}
        if TASK_PROTOCOL not in imported:
            wrong.append(f"{module} does not import {TASK_PROTOCOL}")
        wrong += [
            f"{module} imports the task module {name}"
            for name in imported
            if own(name) and floor_of(name) == tasks
        ]
    assert not wrong, "\n".join(wrong)


def private_uses(module):
    """`(line, "module._name")` of each private name `module` takes from another."""
    tree = ast.parse(MODULES[module].read_text())
    bound = {}  # a name in this module -> the module it is
    uses = []
    for line, imported, names in imports(module):
        uses += [(line, f"{imported}.{name}") for name in names if is_private(name)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    bound[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in MODULES:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                uses.append((node.lineno, ".".join([bound[value.id], *chain])))
    return uses


def test_no_module_takes_a_private_name_from_another():
    wrong = [
        f"{MODULES[module].relative_to(ROOT)}:{line} takes {name}"
        for module in MODULES
        for line, name in private_uses(module)
    ]
    assert not wrong, "\n".join(wrong)


def long_modules(limit, commands_only=False):
    """`path: N lines` of each module of `PACKAGES` over `limit` lines (of
    each command only, a module with a `__main__` guard, if `commands_only`)."""
    return [
        f"{path.relative_to(ROOT)}: {count} lines"
        for path in MODULES.values()
        if not commands_only or MAIN_GUARD in path.read_text()
        if (count := len(path.read_text().splitlines())) > limit
    ]


def test_no_module_is_over_max_lines():
    long = long_modules(MAX_LINES)
    assert not long, f"over {MAX_LINES} lines:\n" + "\n".join(long)


def test_no_two_modules_share_a_file_name():
    paths = {}
    for path in MODULES.values():
        if path.name != "__init__.py":
            paths.setdefault(path.name, []).append(path.relative_to(ROOT).as_posix())
    shared = [", ".join(found) for found in paths.values() if len(found) > 1]
    assert not shared, "modules that share a file name:\n" + "\n".join(shared)


def test_commands_are_thin():
    long = long_modules(COMMAND_MAX_LINES, commands_only=True)
    assert not long, f"commands over {COMMAND_MAX_LINES} lines:\n" + "\n".join(long)


def executed_imports(module):
    """The modules `module`'s import runs: its module-level imports, those of
    the modules of ours they name (packages included), and so on; imports
    inside functions are left out, as they run when called."""

    def top_level(body):
        for node in body:
            if isinstance(node, ast.Import):
                yield from (alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level:
                for alias in node.names:
                    name = f"{node.module}.{alias.name}"
                    yield name if name in MODULES else node.module
            elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for field in ("body", "orelse", "finalbody", "handlers"):
                    yield from top_level(getattr(node, field, []))

    found, pending = set(), [module]
    while pending:
        current = pending.pop()
        parts = current.split(".")
        for name in {".".join(parts[:n]) for n in range(1, len(parts) + 1)}:
            if name in found:
                continue
            found.add(name)
            if name in MODULES:
                tree = ast.parse(MODULES[name].read_text())
                pending += top_level(tree.body)
    return found


def test_commands_import_keras_only_once_their_arguments_are_read():
    wrong = {}
    for command in COMMANDS:
        loaded = sorted(
            name
            for name in executed_imports(command)
            if name.split(".")[0] in LOADS_KERAS
        )
        if loaded:
            wrong[command] = loaded
    assert not wrong, wrong


def import_graph():
    """`{module: modules it imports}`, package faces (`__init__.py`) left out
    as `farm-studio look` leaves them out; imports inside functions count."""
    faces = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    return {
        module: {name for _, name, _ in imports(module) if name in MODULES} - faces
        for module in MODULES
        if module not in faces
    }


def circles(graph):
    """The strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other_in_a_circle():
    # What `farm-studio look` counts as circles: an import inside a function
    # ties two modules as one at the top does.
    assert circles(import_graph()) == []


def test_the_circle_scan_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]
    ]
