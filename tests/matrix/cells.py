"""The release cells of ``matrix/*.toml``, for nox and for the results table."""

from __future__ import annotations

from pathlib import Path

import tomllib

MATRIX = Path(__file__).parents[2] / "matrix"


def load_cells() -> dict[str, dict]:
    """Every cell by name, with its library's ``tests`` folder and ``benchmarks``."""
    cells = {}
    for path in sorted(MATRIX.glob("*.toml")):
        library = tomllib.loads(path.read_text())
        for cell in library["cells"]:
            cells[cell["name"]] = {**cell, "tests": library["tests"], "benchmarks": library.get("benchmarks", [])}
    return cells


def load_references() -> dict[str, str]:
    """For each patch id, the ``distribution-version`` whose outcomes its patched releases must equal."""
    return {
        id: release
        for path in sorted(MATRIX.glob("*.toml"))
        for id, release in tomllib.loads(path.read_text()).get("references", {}).items()
    }
