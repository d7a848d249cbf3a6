"""docs/layout.md names every module of the packages, and only files that exist."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ROOT / "docs/layout.md"
PACKAGES = ("zoo", "training", "tuning")
ENTRY = re.compile(r"[\w.-]+(?:/[\w.-]+)*(?:/|\.py)")
# A path with a folder, written out in prose: `zoo/cells/__init__.py`.
FULL_PATH = re.compile(r"(?<![\w./<>-])([\w-]+(?:/[\w.-]+)+\.py)\b")


def tree_paths(block):
    """The paths a tree names: an entry is relative to the folder above it.

    An entry line starts with one or more comma-separated names, each a folder
    (`cells/`) or a module (`data/dyck_strings.py`), then two spaces and what
    it holds; a folder's entries are indented under it. Lines of description
    alone are skipped; full paths in descriptions are read as prose.
    """
    named, descriptions, folders = set(), [], []  # folders: (indent, path)
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip())
        names, _, description = line.strip().partition("  ")
        tokens = [token.strip() for token in names.split(",")]
        if not all(ENTRY.fullmatch(token) for token in tokens):
            descriptions.append(line)
            continue
        descriptions.append(description)
        while folders and folders[-1][0] >= indent:
            folders.pop()
        parent = folders[-1][1] if folders else ""
        for token in tokens:
            if token.endswith("/"):
                folders.append((indent, parent + token))
            else:
                named.add(parent + token)
    return named, "\n".join(descriptions)


def named_paths():
    text = LAYOUT.read_text()
    blocks = re.findall(r"^```\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    named, prose = set(), re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.M)
    for block in blocks:
        in_tree, descriptions = tree_paths(block)
        named |= in_tree
        prose += "\n" + descriptions
    return named | set(FULL_PATH.findall(prose))


def modules():
    return {
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.name != "__init__.py"
    }


def test_the_tree_is_read():
    named = named_paths()
    assert {"zoo/models.py", "training/train.py", "tuning/search.py"} <= named


def test_every_module_is_named():
    missing = sorted(modules() - named_paths())
    assert not missing, f"docs/layout.md does not name: {', '.join(missing)}"


def test_every_named_path_exists():
    gone = sorted(path for path in named_paths() if not (ROOT / path).is_file())
    assert not gone, f"docs/layout.md names files that do not exist: {gone}"
