"""What every patch must do, checked for each patch whose target this matrix cell installs.

The state each patch must reach here is derived from its declaration and the
cell's pins (``tests/matrix/cells.py``), never copied: where that state is
``applied`` the probe must show the bug without gpushim and not with it,
whichever comes first, gpushim or the target; ``GPUSHIM_DISABLE`` brings the
bug back; patching twice wraps once; what the patch put in place keeps what
it replaced as ``__wrapped__``; ``unpatch()`` restores the identical objects.
Where the patch ends in any other state, the probe finds no bug and the
patch touched nothing.  A probe runs in a fresh interpreter, where a crash
counts as the bug showing.
"""

from __future__ import annotations

import functools
import importlib
import json

import pytest

import gpushim
from gpushim.states import APPLIED, DISABLED, NOT_INSTALLED
from tests.matrix.cells import expected_state
from tests.support import run_python

INSTALLED = [id for id in gpushim.registry().ids if gpushim.record(id)["state"] != NOT_INSTALLED]
if not INSTALLED:
    pytest.skip("no target of any patch is installed", allow_module_level=True)

PROBE = """
import json, sys
{before}
import gpushim
patch = gpushim.registry()[{id!r}]
bug = patch.probe()
print("@@" + json.dumps({{"bug": bug, "state": gpushim.record({id!r})["state"]}}))
"""


@functools.cache
def probe(id: str, before: str = "", after: str = "", disabled: bool = False) -> tuple[str | None, str]:
    """The probe's answer in a fresh interpreter (``"crashed"`` if it died), and the patch's state there.

    Each answer is obtained once per session: tests that ask the same question share it.
    """
    target = gpushim.registry().library(id).target
    code = PROBE.format(before="\n".join([before, f"import {target}", after]), id=id)
    finished = run_python(code, env={"GPUSHIM_DISABLE": id} if disabled else None)
    if finished.returncode < 0:
        return f"crashed with signal {-finished.returncode}", "-"
    assert finished.returncode == 0, finished.stderr[-3000:]
    answer = json.loads(next(line[2:] for line in finished.stdout.splitlines() if line.startswith("@@")))
    return answer["bug"], answer["state"]


@pytest.fixture(params=INSTALLED)
def id(request):
    return request.param


@pytest.fixture
def expected(id):
    return expected_state(id)


def test_the_state_is_the_one_derived_from_the_declaration_and_the_cell(id, expected):
    _, state = probe(id, before="import gpushim.auto")
    assert state == expected


def test_needed_the_probe_shows_the_bug_without_gpushim_exactly_where_it_applies(id, expected):
    bug, _ = probe(id)
    assert (bug is not None) == (expected == APPLIED), bug


@pytest.mark.parametrize("order", ["gpushim first", "target first"])
def test_effective_with_gpushim_before_or_after_the_target(id, expected, order):
    if order == "gpushim first":
        bug, state = probe(id, before="import gpushim.auto")
    else:
        bug, state = probe(id, after="import gpushim.auto")
    assert (bug, state) == (None, expected)


def test_disabling_the_patch_brings_the_bug_back(id, expected):
    if expected != APPLIED:
        pytest.skip(f"{id} is {expected} here")
    bug, state = probe(id, before="import gpushim.auto", disabled=True)
    assert bug is not None and state == DISABLED


@pytest.fixture
def target(id):
    """The module the patch changes, imported as a user would: its library first."""
    importlib.import_module(gpushim.registry().library(id).target)
    return importlib.import_module(gpushim.registry()[id].module or gpushim.registry().library(id).target)


def test_patching_twice_wraps_once_and_each_replacement_keeps_its_original(id, expected, target):
    gpushim.patch(id)
    try:
        journal = gpushim.registry().journal(id)
        if expected != APPLIED:
            assert journal is None, f"{id} is {expected} here but replaced {journal.entries}"
            return
        entries = list(journal.entries)
        gpushim.patch(id)
        assert gpushim.registry().journal(id).entries == entries
        for entry in entries:
            assert entry.bound() is entry.new
            assert entry.new.__wrapped__ is entry.original
    finally:
        gpushim.unpatch(id)


def test_unpatch_restores_the_identical_objects_everywhere(id, expected, target):
    if expected != APPLIED:
        pytest.skip(f"{id} is {expected} here")
    gpushim.patch(id)
    try:
        entries = list(gpushim.registry().journal(id).entries)
    finally:
        gpushim.unpatch(id)
    for entry in entries:
        assert entry.bound() is (None if entry.inherited else entry.original)
