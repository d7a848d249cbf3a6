"""The README and docs/*.md: the install commands, the modules they run, links."""

import ast
import importlib.machinery
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [
    README,
    ROOT / "REPRODUCTION.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "reproduction").glob("*.md")),
    *sorted((ROOT / "benchmarks").glob("*.md")),
]
# `python -m` modules that are tools, not this repository's commands.
TOOLS = {"pytest", "pip", "venv"}


def ci_command():
    commands = [
        line
        for line in (ROOT / ".ci/run").read_text().splitlines()
        if line.startswith("python3.11 -m venv")
    ]
    assert len(commands) == 1
    return commands[0]


def bash_lines(text):
    blocks = re.findall(r"^```bash\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    return [line for block in blocks for line in block.splitlines()]


def test_ci_runs_the_readme_test_command_as_written():
    assert f"\n{ci_command()}\n" in README.read_text()


def test_readme_install_commands_install_and_run_the_main_job_and_the_tests():
    installs = [
        line
        for line in bash_lines(README.read_text())
        if line.startswith("python3.11 -m venv")
    ]
    assert len(installs) == 2, installs
    run, test = installs
    assert run.split(" && ") == [
        "python3.11 -m venv .venv",
        ". .venv/bin/activate",
        "pip install .",
        "python -m training.train",
    ]
    assert test == ci_command()


def module_path(name):
    """The file `python -m name` runs from this repository, or None.

    Found with the import system's path finder one package at a time, so no
    package is imported (zoo and tuning import Keras and TensorFlow).
    """
    parts = name.split(".")
    search = [str(ROOT)]
    spec = None
    for depth in range(len(parts)):
        if search is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(
            ".".join(parts[: depth + 1]), search
        )
        if spec is None:
            return None
        search = spec.submodule_search_locations
    if search is not None:  # a package runs its __main__
        spec = importlib.machinery.PathFinder.find_spec(f"{name}.__main__", search)
        if spec is None:
            return None
    return Path(spec.origin)


def python_m_modules():
    found = set()
    for page in PAGES:
        for name in re.findall(r"\bpython -m\s+([\w.]+)", page.read_text()):
            found.add((page.relative_to(ROOT).as_posix(), name.rstrip(".")))
    return sorted(found)


def test_the_pages_name_commands():
    names = {name for _, name in python_m_modules()}
    assert {"training.train", "training.evaluate", "tuning.search"} <= names


@pytest.mark.parametrize("page, name", python_m_modules())
def test_python_m_runs_a_main_of_this_repository(page, name):
    if name in TOOLS:
        return
    path = module_path(name)
    assert path is not None, f"{page}: python -m {name}: no such module"
    assert ROOT in path.parents, f"{page}: python -m {name} is not this repo's"
    tree = ast.parse(path.read_text())
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    runs_main = any(
        isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
        for node in tree.body
    )
    assert "main" in defined, f"{page}: {path.name} has no main()"
    assert runs_main, f"{page}: {path.name} does not run main() as __main__"


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def prose(text):
    """The text outside fenced and indented code blocks and code spans."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    text = re.sub(r"(?:^|\n\n)(?: {4}.*\n?)+", "\n\n", text)
    return re.sub(r"`[^`]*`", "", text)


def anchors(page):
    # Fenced blocks hold no headings; a heading's code spans are in its anchor.
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.DOTALL | re.M)
    headings = re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)
    return {slug(heading) for heading in headings}


def links():
    found = []
    for page in PAGES:
        text = prose(page.read_text())
        for target in re.findall(r"!?\[[^\]]*\]\(([^)\s]+)[^)]*\)", text):
            if not re.match(r"[a-z]+:", target):
                found.append((page.relative_to(ROOT).as_posix(), target))
    return sorted(set(found))


def test_the_pages_link_to_each_other():
    targets = {target for _, target in links()}
    assert "docs/training.md" in targets and "../REPRODUCTION.md" in targets


@pytest.mark.parametrize("page, target", links())
def test_relative_link_resolves(page, target):
    path, _, anchor = target.partition("#")
    file = (ROOT / page).parent / path if path else ROOT / page
    assert file.exists(), f"{page}: {target}: no such file"
    if anchor:
        assert file.suffix == ".md", f"{page}: {target}: anchor into a non-page"
        assert anchor in anchors(file), f"{page}: {target}: no such heading"


def test_the_readme_is_short_and_links_every_docs_page():
    # Issue 24: one screenful or two for a newcomer, the reference in docs/.
    text = README.read_text()
    assert len(text.splitlines()) < 250
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert pages
    unlinked = [p.name for p in pages if f"](docs/{p.name}" not in text]
    assert not unlinked, f"README.md links no docs page named: {unlinked}"


def test_the_readme_lists_every_preset_with_its_cards_size_and_command():
    import zoo

    rows = {
        cells[0].strip("`"): cells
        for line in README.read_text().splitlines()
        if line.startswith("| `")
        for cells in [[cell.strip() for cell in line.strip("|").split(" | ")]]
    }
    for name in zoo.presets.available():
        card = zoo.preset_card(name)
        assert name in rows, f"{name} is not in the README's trained-models table"
        _, _, _, size, command = rows[name]
        assert size == f"{card['size_bytes']:,} bytes", name
        assert command == f"`{card['command']}`", name
