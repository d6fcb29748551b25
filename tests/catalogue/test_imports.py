"""Nothing imports a test module: what tests share lives in modules of its own.

A corpus two test modules use is a ``*_corpus.py`` beside them (``tests/cupy/copyto_corpus.py``),
and helpers every library's tests use are in ``tests/support.py``.  A test module imported by
another runs its gates and skips where that one is collected, and a test function imported
with it is collected twice.  Read from the source, so that every library's tests are checked
wherever they are collected.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["benchmarks", "matrix", "patches", "shims", "tests"]
BROKEN = ROOT / "tests" / "plugins" / "broken"  # patches with syntax errors, on purpose


def imported(tree: ast.Module) -> list[tuple[int, str]]:
    """Each name an import statement of ``tree`` reaches, dotted from its module, with its line."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            names += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return names


def test_imports_name_test_modules_by_their_parts():
    tree = ast.parse("import tests.warp.test_x\nfrom tests.dali import test_y as y\nfrom . import test_z\nimport os")
    assert imported(tree) == [(1, "tests.warp.test_x"), (2, "tests.dali.test_y"), (3, "..test_z"), (4, "os")]


def test_no_module_imports_a_test_module():
    paths = [path for folder in SOURCES for path in (ROOT / folder).rglob("*.py") if BROKEN not in path.parents]
    found = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in sorted(paths)
        for line, name in imported(ast.parse(path.read_text()))
        if any(part.startswith("test_") for part in name.split("."))
    ]
    assert found == []


def test_only_the_commands_import_the_list_of_upstream_fixes_and_only_when_they_run():
    """``import gpushim.auto`` costs nothing more for the list (tests/cli/test_advisories.py runs it)."""
    found = set()
    for path in sorted((ROOT / "shims").rglob("*.py")):
        tree = ast.parse(path.read_text())
        functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inside = {id(node) for function in functions for node in ast.walk(function)}
        for node in ast.walk(tree):
            names = imported(ast.Module([node], [])) if isinstance(node, (ast.Import, ast.ImportFrom)) else []
            if any("advisories" in name for _, name in names):
                found.add((path.relative_to(ROOT).as_posix(), id(node) in inside))
    assert found == {("shims/cli.py", True), ("shims/freeze.py", True)}
