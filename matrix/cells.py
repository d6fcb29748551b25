"""The release cells of ``matrix/*.toml``, and the state each patch must reach in one.

A cell is a name, the requirements it installs and whether it has a GPU half.
What each patch must do there is not written in the cell: it follows from the
patch's declaration (``affected``, ``only_with``) and the releases installed,
computed by :func:`gpushim.expectations.expected_state` with :mod:`importlib.metadata`
and :mod:`packaging`, apart from gpushim's own gate, so that the matrix checks
that gate and cannot leave a new patch unchecked.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

MATRIX = Path(__file__).parent
# Where a cell's tests record their corpus' outcomes and the cell its states, for ``compare`` and RESULTS.md.
ARTEFACTS = Path(os.environ.get("MATRIX_ARTEFACTS", MATRIX.parent / ".artefacts"))
# What the tests need beside gpushim and the releases, in every cell and on a GPU host.
TEST_TOOLS = ["pytest", "hypothesis", "tomli; python_version < '3.11'"]


def saved(cell: str, what: str) -> object:
    """What ``cell``'s matrix session saved as ``what`` (``states``, ``selftest``); None where it did not run."""
    path = ARTEFACTS / "cells" / f"{cell}.{what}.json"
    return json.loads(path.read_text()) if path.exists() else None


def not_run(cells, what: str = "states") -> list[str]:
    """Those of ``cells`` whose session saved no ``what``: their Python was not found, or they were not selected."""
    return [cell for cell in cells if saved(cell, what) is None]


def library_of(spec: dict) -> str:
    """The library a cell tests, named as its patch ids begin: ``tests/dali/test_x.py`` is ``dali``."""
    return Path(spec["tests"]).parts[1]


# The keys of a library's ``matrix/*.toml`` and of its cells, required first; a cell's ``tests``,
# ``benchmarks``, ``gpu-install`` and ``gpu-pip`` stand in for its library's.
LIBRARY_KEYS = (("cells",), ("install", "tests", "benchmarks", "gpu-install", "gpu-pip", "references"))
CELL_KEYS = (
    ("name", "install", "gpu"),
    ("python", "demo", "pip", "no-deps", "pytest", "tests", "benchmarks", "gpu-install", "gpu-pip"),
)


def _check_keys(where: str, table: dict, keys: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
    """Refuse a table whose keys are not the schema's: a misspelled key would otherwise be ignored."""
    required, optional = keys
    unknown = sorted(set(table) - {*required, *optional})
    missing = [key for key in required if key not in table]
    if unknown or missing:
        problems = [f"unknown key {key!r}" for key in unknown] + [f"no {key!r}" for key in missing]
        raise ValueError(f"{where}: {', '.join(problems)}; the keys are {', '.join(required + optional)}")


def _libraries() -> list[dict]:
    """Each library's ``matrix/*.toml``, its keys checked; radar.toml is the radar's grid, not release cells."""
    libraries = []
    for path in sorted(MATRIX.glob("*.toml")):
        if path.name == "radar.toml":
            continue
        library = tomllib.loads(path.read_text())
        _check_keys(f"matrix/{path.name}", library, LIBRARY_KEYS)
        for cell in library["cells"]:
            _check_keys(f"matrix/{path.name}, cell {cell.get('name')!r}", cell, CELL_KEYS)
        libraries.append(library)
    names = [cell["name"] for library in libraries for cell in library["cells"]]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"matrix/*.toml: cells named twice, one hiding the other: {', '.join(twice)}")
    return libraries


def load_cells() -> dict[str, dict]:
    """Every cell by name, with its library's ``tests`` folder, ``benchmarks`` and GPU installs.

    A library's ``install`` goes into each of its cells beside the cell's own.
    ``demo`` marks the cells the demo runs: together they show every patch's
    bug, each in one release (``tests/matrix/test_demo.py`` checks that).

    ``pip`` is what a cell installs by pip beside its ``install`` (torch,
    which uv would fetch as a CUDA build of several GB).  ``no-deps`` is what
    it installs without its requirements, over them (a release forced onto a
    NumPy it excludes); ``pytest`` are options of the cell's test run
    (``--gpushim`` where the library imports only with gpushim active).  ``gpu-install`` (by
    uv) and ``gpu-pip`` (by pip) are what the library's GPU tests need beside
    the cell's own requirements, on a GPU host only.
    """
    keys = ("tests", "benchmarks", "gpu-install", "gpu-pip")
    return {
        cell["name"]: {
            "pip": [],
            "demo": False,
            "no-deps": [],
            "pytest": [],
            "benchmarks": [],
            "gpu-install": [],
            "gpu-pip": [],
            **library_keys,
            **cell,
            "install": [*library.get("install", []), *cell["install"]],
        }
        for library in _libraries()
        for library_keys in [{key: library[key] for key in keys if key in library}]
        for cell in library["cells"]
    }


@functools.lru_cache(maxsize=None)
def load_references() -> dict[str, str]:
    """For each patch id, the ``distribution-version`` whose outcomes its patched releases must equal.

    That is its ``fixed_in`` as released by its library's first distribution
    (the one the cells install), unless the library's ``[references]`` names
    another: a drift fix's own release in the environment it was built for, or
    a later fixed release where the first has no cell.  A patch with neither has none.
    The patches are read from gpushim as installed, so only a session that installs it may ask.
    """
    from gpushim.catalogue import discover

    derived = {
        id: f"{library.distributions[0]}-{patch.fixed_in}"
        for library in discover("gpushim.patches")
        for id in library.ids
        for patch in [library.load(id)]
        if patch.fixed_in is not None
    }
    return {**derived, **stated_references()}


def stated_references() -> dict[str, str]:
    """The references the libraries' ``[references]`` state, each where it is not the patch's ``fixed_in``."""
    return {id: release for library in _libraries() for id, release in library.get("references", {}).items()}


def reference_of(id: str) -> str | None:
    return load_references().get(id)


def reference_record(id: str, folder: Path = ARTEFACTS) -> dict | None:
    """The outcomes the reference release of patch ``id`` recorded, unpatched, if its cell ran.

    Only records of one ``folder`` compare: a cell on a Python of its own records in a folder of that Python.
    """
    for path in sorted(folder.glob(f"{id}@*.json")):
        document = json.loads(path.read_text())
        if document["release"] == reference_of(id) and document["state"] != "applied":
            return document
    return None
