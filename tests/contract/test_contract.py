"""What every patch must do, checked for each patch whose target this matrix cell installs.

The state each patch must reach here is derived from its declaration and the
cell's pins (``tests/matrix/cells.py``), never copied: where that state is
``applied`` the probe must show the bug without gpushim and not with it,
whichever comes first, gpushim or the target; ``GPUSHIM_DISABLE`` brings the
bug back; patching twice wraps once; what the patch put in place keeps what
it replaced as ``__wrapped__``; ``unpatch()`` restores the identical objects.
Where the patch ends in any other state, the probe finds no bug and the
patch touched nothing.  Probes run in fresh interpreters, all of a cell's in
one per question, and a probe that crashes its interpreter is asked again in
one of its own, where the crash counts as the bug showing.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import tempfile

import pytest

import gpushim
from gpushim.states import APPLIED, DISABLED, NOT_INSTALLED
from tests.gpu import on_gpu
from tests.matrix.cells import expected_state
from tests.support import run_python

INSTALLED = [id for id in gpushim.registry().ids if gpushim.record(id)["state"] != NOT_INSTALLED]
if not INSTALLED:
    pytest.skip("no target of any patch is installed", allow_module_level=True)

PROBES = """
import json, sys
{before}
{targets}
{after}
import gpushim
with open(sys.argv[1], "a") as answers:
    for id in sys.argv[2:]:
        bug = gpushim.registry()[id].probe()
        answers.write(json.dumps({{"id": id, "bug": bug, "state": gpushim.record(id)["state"]}}) + "\\n")
        answers.flush()
"""

# What runs before and after the targets' imports.
WITHOUT, GPUSHIM_FIRST, TARGET_FIRST = ("", ""), ("import gpushim.auto", ""), ("", "import gpushim.auto")


def probes(ids: tuple[str, ...], order: tuple[str, str], disabled: str = "") -> dict[str, tuple[str | None, str]]:
    """Each probe's answer and its patch's state, from one fresh interpreter that imports the targets.

    A probe that kills its interpreter (a double free does) is asked again in
    one of its own, where dying counts as the bug showing.
    """
    targets = "\n".join(f"import {target}" for target in sorted({gpushim.registry().library(id).target for id in ids}))
    code = PROBES.format(before=order[0], targets=targets, after=order[1])
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "answers.jsonl")
        finished = run_python(code, args=[path, *ids], env={"GPUSHIM_DISABLE": disabled} if disabled else None)
        answered = {}
        if os.path.exists(path):
            for line in open(path).read().splitlines():
                answer = json.loads(line)
                answered[answer["id"]] = (answer["bug"], answer["state"])
    if finished.returncode < 0 and len(ids) == 1:
        return {ids[0]: (f"the interpreter died of signal {-finished.returncode}", "-")}
    assert finished.returncode <= 0, finished.stderr[-3000:]
    missing = tuple(id for id in ids if id not in answered)
    for id in missing:
        answered.update(probes((id,), order, disabled))
    return answered


@functools.lru_cache(maxsize=None)
def answers(order: tuple[str, str]) -> dict[str, tuple[str | None, str]]:
    """Every installed patch's probe, asked once per cell in each order."""
    return probes(tuple(INSTALLED), order)


def probe(id: str, order: tuple[str, str]) -> tuple[str | None, str]:
    return answers(order)[id]


@pytest.fixture(params=INSTALLED)
def id(request):
    return request.param


@pytest.fixture
def expected(id):
    return expected_state(id)


def test_the_state_is_the_one_derived_from_the_declaration_and_the_cell(id, expected):
    _, state = probe(id, GPUSHIM_FIRST)
    assert state == expected


def test_needed_the_probe_shows_the_bug_without_gpushim_exactly_where_it_applies(id, expected):
    bug, _ = probe(id, WITHOUT)
    assert (bug is not None) == (expected == APPLIED), bug


@pytest.mark.parametrize("order", [GPUSHIM_FIRST, TARGET_FIRST], ids=["gpushim first", "target first"])
def test_effective_with_gpushim_before_or_after_the_target(id, expected, order):
    assert probe(id, order) == (None, expected)


@on_gpu
def test_on_a_device_the_probes_give_the_same_verdicts(id, expected):
    """Where a device is present the probes use its memory (``gpushim.device``): needed and effective still hold.

    The tests above ask the same probes on any machine; this one is marked
    ``gpu`` so that the GPU session (``nox -t gpu``), which runs the marked
    tests only, asks them on the device as well.
    """
    bug, _ = probe(id, WITHOUT)
    assert (bug is not None) == (expected == APPLIED), bug
    assert probe(id, GPUSHIM_FIRST) == (None, expected)


def test_disabling_the_patch_brings_the_bug_back(id, expected):
    if expected != APPLIED:
        pytest.skip(f"{id} is {expected} here")
    bug, state = probes((id,), GPUSHIM_FIRST, disabled=id)[id]
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
