"""The demo runs a few cells, not all: between them they must show every patch's bug.

A patch that ends ``applied`` in some cell of the run must end so in a demo
cell too, where its probe shows the bug without gpushim and not with it.
"""

from __future__ import annotations

from matrix.cells import load_cells, saved

CELLS = load_cells()


def applied_in(cells: list[str]) -> set[str]:
    ids = set()
    for cell in cells:
        states = saved(cell, "states")
        if states:
            ids |= {record["id"] for record in states["records"] if record["state"] == "applied"}
    return ids


def test_the_demo_cells_show_every_patch_that_applies_anywhere():
    demo = [name for name, spec in CELLS.items() if spec["demo"]]
    assert applied_in(list(CELLS)) - applied_in(demo) == set()
