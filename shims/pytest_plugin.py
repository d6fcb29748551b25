"""The pytest plugin (entry point ``pytest11``): gpushim's part in a test session.

Its header line counts the patches of each installed release by state, names
those a reader needs to know of, and says whether gpushim is active in the
session, so that a test log tells whether its results were obtained with the
fixes.
``--gpushim`` applies them in the pytest process before any conftest file is
imported; ``--gpushim-strict`` makes a patch that cannot be applied an error
(``GPUSHIM_STRICT=1`` for the session and its subprocesses) and fails the
session if one failed anyway; the ``gpushim_status`` fixture gives a test
the status records.  pytest loads this module in every run wherever gpushim
is installed, so importing it costs no more than ``import gpushim``, and
nothing in it imports a target.
"""

from __future__ import annotations

import os
import sys

import pytest

import gpushim
from gpushim import PatchError, switches

from .plugins import labelled
from .states import APPLIED, FAILED, INACTIVE, NOT_AFFECTED, OPT_IN, PENDING, Record


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpushim")
    group.addoption("--gpushim", action="store_true", help="apply gpushim's patches before conftest files are imported")
    group.addoption(
        "--gpushim-strict",
        action="store_true",
        help="a gpushim patch that cannot be applied raises (GPUSHIM_STRICT=1) and fails the session",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    options = early_config.known_args_namespace
    if options.gpushim_strict:
        _set_for_the_session(early_config, switches.STRICT, "1")
    if options.gpushim or "gpushim.auto" in sys.modules:
        # Patching again is also how gpushim, made active by gpushim-run, reads GPUSHIM_STRICT anew.
        try:
            gpushim.patch()
        except PatchError:
            pass  # a patch that failed before the session: it is recorded, and fails the session at its end


def _set_for_the_session(config: pytest.Config, name: str, value: str) -> None:
    before = os.environ.get(name)
    os.environ[name] = value

    def restore() -> None:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before

    config.add_cleanup(restore)


INACTIVE_NOTE = "inactive: gpushim is not active in this process (pytest --gpushim or gpushim-run pytest activates it)"
OPT_IN_NOTE = "opt-in: the bug is there; the patch applies only where GPUSHIM_ENABLE names it"


# The states most patches are in, counted; a patch in any other is named, as a reader needs to know which.
COUNTED = (APPLIED, PENDING, INACTIVE, NOT_AFFECTED)


def header(records: list[Record]) -> str:
    """``gpushim VERSION: distribution version (N state, ..., state: id, ...), ...`` for the installed targets.

    ``pending`` and ``inactive`` must not be confused here: a test has the
    fix of a pending patch as soon as it imports the library, and never has
    the fix of an inactive one.  The line stays one line however many patches
    a release has: the usual states are counted (``gpushim status`` lists
    them), and only a patch that failed, was switched off, waits to be opted
    in or cannot be backported is named, and every patch of another
    distribution, with it.  What another distribution declared but cannot be
    used is listed last.
    """
    releases: dict[str, list[Record]] = {}
    for record in records:
        if record["distribution"] is not None:
            releases.setdefault(f"{record['distribution']} {record['installed_version']}", []).append(record)
    listed = ", ".join(f"{release} ({_states(patches)})" for release, patches in releases.items())
    line = f"gpushim {gpushim.__version__}: {listed or 'no target library installed'}"
    unusable = [f"{record['id']} ({record['reason']})" for record in records if record["target"] is None]
    if unusable:
        line += f"; failed: {', '.join(unusable)}"
    for state, note in ((INACTIVE, INACTIVE_NOTE), (OPT_IN, OPT_IN_NOTE)):
        if any(record["state"] == state for record in records):
            line += f"; {note}"
    return line


def _states(records: list[Record]) -> str:
    """How many of gpushim's own patches are in each usual state, then every other patch named, by state."""
    counted: dict[str, int] = {}
    named: dict[str, list[str]] = {}
    for record in records:
        if record["state"] in COUNTED and labelled(record) == record["id"]:
            counted[record["state"]] = counted.get(record["state"], 0) + 1
        else:
            named.setdefault(record["state"], []).append(labelled(record))
    return ", ".join(
        [f"{counted[state]} {state}" for state in COUNTED if state in counted]
        + [f"{state}: {', '.join(ids)}" for state, ids in named.items()]
    )


def pytest_report_header(config: pytest.Config) -> str:
    return header(gpushim.status())


def _failed() -> list[Record]:
    return [record for record in gpushim.status() if record["state"] == FAILED]


def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.getoption("gpushim_strict") and _failed() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if not config.getoption("gpushim_strict"):
        return
    for record in _failed():
        terminalreporter.write_line(f"gpushim --gpushim-strict: {record['id']} failed: {record['reason']}", red=True)


@pytest.fixture
def gpushim_status() -> dict[str, Record]:
    """gpushim's status records by patch id, as they stand when the test starts."""
    return {record["id"]: record for record in gpushim.status()}
