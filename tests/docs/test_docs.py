"""The README and docs/ as a reader meets them: the site builds, the examples run, the README stays short.

A Python example runs in a fresh interpreter of this environment where what
it imports at its top is installed here (gpushim, pytest, the standard
library); one that imports a GPU library or a cluster's is compiled only.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import run_python

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def examples() -> list:
    return [
        pytest.param(code, id=f"{page.name}-{index}")
        for page in PAGES
        for index, code in enumerate(re.findall(r"^```python\n(.*?)^```$", page.read_text(), re.S | re.M))
    ]


def imported_at_the_top(code: str) -> set[str]:
    names = set()
    for statement in ast.parse(code).body:
        if isinstance(statement, ast.Import):
            names |= {alias.name.split(".")[0] for alias in statement.names}
        elif isinstance(statement, ast.ImportFrom) and statement.level == 0:
            names.add(statement.module.split(".")[0])
    return names


@pytest.mark.parametrize("code", examples())
def test_every_python_example_runs_where_what_it_imports_is_installed(code):
    compile(code, "example", "exec")
    missing = sorted(name for name in imported_at_the_top(code) if importlib.util.find_spec(name) is None)
    if missing:
        pytest.skip(f"imports {', '.join(missing)}, not installed here: compiled only")
    finished = run_python(code)
    assert finished.returncode == 0, finished.stderr


def test_the_site_builds_without_a_warning(tmp_path):
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    finished = subprocess.run(build, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr


def test_the_readme_holds_what_a_user_needs_first_in_at_most_2500_words():
    assert len((ROOT / "README.md").read_text().split()) <= 2500
