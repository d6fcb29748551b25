"""The demo runs a few cells, not all: between them they must show every patch's bug.

A patch that ends ``applied`` in some cell of the run must end so in a demo
cell too, where its probe shows the bug without gpushim and not with it.
"""

from __future__ import annotations

import json

import pytest

from matrix import cells
from matrix.cells import load_cells, not_run, saved
from matrix.results import selftest_table

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
    shown_nowhere = applied_in(list(CELLS)) - applied_in(demo)
    if shown_nowhere and not_run(demo):
        pytest.skip(f"{', '.join(sorted(shown_nowhere))} not checked: {', '.join(not_run(demo))} did not run")
    assert shown_nowhere == set()


def test_the_last_line_names_each_cell_not_run_what_was_looked_for_and_the_command_that_runs_it(tmp_path, monkeypatch):
    monkeypatch.setattr(cells, "ARTEFACTS", tmp_path)  # no cell saved anything
    monkeypatch.setenv("PATH", str(tmp_path))
    last = selftest_table(["dali-1.35.0-py312", "warp-1.6.0"]).splitlines()[-1]
    assert last == (
        "not run: dali-1.35.0-py312 (python3.12 not found on PATH: with pyenv, select 3.12 too, as the README says), "
        "warp-1.6.0 (not selected, or its session failed); "
        "to run them: nox -s \"selftest(cell='dali-1.35.0-py312')\" \"selftest(cell='warp-1.6.0')\" demo"
    )


def test_only_a_fix_that_did_not_work_reads_still_broken(tmp_path, monkeypatch):
    monkeypatch.setattr(cells, "ARTEFACTS", tmp_path)
    (tmp_path / "cells").mkdir()
    verdicts = [
        {"id": "warp.fixed", "state": "applied", "verdict": "effective", "without": "x.grad is [0, 0]"},
        {"id": "warp.no_device", "state": "applied", "verdict": "cannot-run", "without": "no CUDA device"},
        {"id": "warp.old", "state": "not-backported", "verdict": "cannot-run", "reason": "1.5 lacks the lowering"},
        {"id": "warp.broken", "state": "applied", "verdict": "needed", "without": "x.grad is [0, 0]"},
    ]
    (tmp_path / "cells" / "warp-1.6.0.selftest.json").write_text(json.dumps(verdicts))
    rows = [line.split("  ")[1:] for line in selftest_table(["warp-1.6.0"]).splitlines()[1:]]
    said = [[part.strip() for part in row if part.strip()] for row in rows]
    assert said == [
        ["warp.fixed", "fixed", "bug: x.grad is [0, 0]"],
        ["warp.no_device", "cannot run here", "why: no CUDA device"],
        ["warp.old", "not backported", "why: 1.5 lacks the lowering"],
        ["warp.broken", "STILL BROKEN", "bug: x.grad is [0, 0]"],
    ]
