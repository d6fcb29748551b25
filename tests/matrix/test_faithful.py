"""Faithful: a patched old release behaves exactly as the first fixed release.

Each matrix cell recorded its outcomes on every patch's corpus (results,
exception types and messages, generated code) in the artefacts folder; the
old releases with the patch applied, the reference release without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cells import ARTEFACTS, library_of, load_cells, load_references, not_run, reference_record

REFERENCES = load_references()


def recorded(state: str) -> list[Path]:
    """The records in ``state``, of cells on nox's Python and, each in its folder, of cells on a Python of their own."""
    paths = sorted(ARTEFACTS.glob("*@*.json")) + sorted(ARTEFACTS.glob("python-*/*@*.json"))
    return [path for path in paths if json.loads(path.read_text())["state"] == state]


def label(path: Path) -> str:
    return str(path.relative_to(ARTEFACTS).with_suffix(""))


@pytest.mark.parametrize("artefact", recorded("applied"), ids=label)
def test_patched_release_matches_its_reference(artefact):
    patched = json.loads(artefact.read_text())
    reference = reference_record(patched["patch"], artefact.parent)
    if reference is None and artefact.parent != ARTEFACTS:
        pytest.skip(f"no reference cell recorded on {artefact.parent.name}")
    if reference is None:
        pytest.fail(f"no outcomes recorded for {REFERENCES[patched['patch']]}; run its matrix cell")
    assert patched["outcomes"] == reference["outcomes"]


def test_every_patch_was_compared():
    """Or, on a machine where some cells could not run (their Python not found), those whose library's did not.

    CI runs every cell: ``.ci/run`` makes every Python visible and fails a
    session whose interpreter is missing.
    """
    compared = {
        json.loads(path.read_text())["patch"]
        for path in recorded("applied")
        if reference_record(json.loads(path.read_text())["patch"], path.parent) is not None
    }
    specs = load_cells()
    not_compared: dict[str, tuple[str, ...]] = {}  # each patch not compared, with its library's cells that did not run
    for id in sorted(set(REFERENCES) - compared):
        not_compared[id] = tuple(cell for cell in not_run(specs) if library_of(specs[cell]) == id.split(".")[0])
    assert [id for id, cells in not_compared.items() if not cells] == []
    by_cells: dict[tuple[str, ...], list[str]] = {}
    for id, cells in not_compared.items():
        by_cells.setdefault(cells, []).append(id)
    if by_cells:
        reasons = [f"{', '.join(ids)} not compared: {', '.join(cells)} did not run" for cells, ids in by_cells.items()]
        pytest.skip("; ".join(reasons))
