"""The self-test tells what the contract proved: in each demo cell, every applied patch effective, every other not
needed.

Each demo cell saved the states its patches reached (``matrix.cell_states``) and
what ``gpushim selftest --json`` found there; the self-test is what a user
runs on an install, so the two must agree, patch by patch.  A probe that needs what the cell lacks
(``warp.cuda13_device_uuid`` a CUDA 13 driver) says ``cannot-run``: no verdict, as the contract skips it.
"""

from __future__ import annotations

import pytest

from matrix.cells import load_cells, saved

VERDICT_OF_STATE = {
    "applied": "effective",
    "not-affected": "not-needed",
    "not-installed": "skipped: not-installed",
    "opt-in": "skipped: opt-in",
    "not-backported": "cannot-run",
}


def cells_that_ran() -> list[str]:
    return [cell for cell in load_cells() if saved(cell, "states") and saved(cell, "selftest")]


@pytest.mark.parametrize("cell", cells_that_ran())
def test_the_self_test_finds_each_applied_patch_effective_and_the_others_not_needed(cell):
    states = {record["id"]: record["state"] for record in saved(cell, "states")["records"]}
    verdicts = {result["id"]: result["verdict"] for result in saved(cell, "selftest")}
    expected = {id: VERDICT_OF_STATE[state] for id, state in states.items()}
    assert verdicts == {
        id: "cannot-run" if verdicts.get(id) == "cannot-run" else verdict for id, verdict in expected.items()
    }
