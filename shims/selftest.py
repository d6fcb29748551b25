"""``gpushim selftest``: does gpushim do its job on this install?

For every patch whose library is installed, the patch's probe (a minimal
reproduction of its bug) runs in fresh interpreters: first without that
patch (does this install have the bug?), then, where the bug showed, with
it (is the bug gone?).  The parent process only starts subprocesses, so it
never imports a target nor creates a CUDA context.

Importing the library is most of a probe's cost, so one interpreter runs
the probes of one library in one state; the libraries are checked at once,
each in a thread of its own.  In both states gpushim is active
with every patch on, as in a user's process; in the ``without`` interpreter
each probe runs between ``gpushim.unpatch(id)`` and ``gpushim.patch(id)`` of
its own patch, so that only the probed patch is off, as when each probe had
an interpreter to itself with ``GPUSHIM_DISABLE=id``.  That rests on what the
contract test proves of every patch: ``unpatch()`` restores the identical
objects, and a patch applied after its library's import works as one
applied during it.  Turning all of a library's patches off instead would
let the probe of one bug trip over another of the same library.  A patch
that would act before one of the library's modules executes cannot be
switched off once that module has: its probe runs in an interpreter of its
own, with ``GPUSHIM_DISABLE=id`` and gpushim active before the library is
imported, where an import that fails shows its bug.

A patch ``not-backported`` to the installed release runs no probe: its
bug is there with gpushim as without, so its verdict is ``cannot-run``,
with the reason ``gpushim status`` gives.

The probes run through :mod:`gpushim.probing`, the contract's runner too:
when an interpreter ends before every probe answered (a probe crashed it,
say), the probe it was asking runs again in an interpreter of its own, where
dying counts as the bug showing, and the probes after it in one again.
"""

from __future__ import annotations

import os
import queue
import time
from concurrent.futures import ThreadPoolExecutor

import gpushim

from .probing import EACH_WITHOUT_ITS_PATCH, GPUSHIM_FIRST, WITH_THE_PATCHES, ask
from .states import DISABLED, INACTIVE, NOT_BACKPORTED, NOT_INSTALLED, OPT_IN, PENDING
from .switches import ENABLE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional

NEEDED = "needed"
EFFECTIVE = "effective"
NOT_NEEDED = "not-needed"
PROBE_ERROR = "probe-error"
CANNOT_RUN = "cannot-run"  # the probe needs what this install lacks: no verdict, and no error of the patch
NO_BUG = "no bug"


def _what_the_probe_said(answer: dict) -> str:
    """The bug it described, else why it could not run, else that there was no bug."""
    return _bug(answer) or answer.get("raised") or answer.get("error") or answer.get("cannot_run") or NO_BUG


def _bug(answer: dict) -> str | None:
    """What the probe returned, where that says the bug shows."""
    return str(answer["bug"]) if answer.get("bug") else None


def selftest(say: Optional[Callable[[str], None]] = None) -> list[dict[str, str | None]]:
    """One record per patch: its status record plus ``verdict`` and what the probes said ``without`` and ``with`` it.

    ``say`` receives a line of progress before and after each interpreter.
    """
    say = say or (lambda line: None)
    results = []
    libraries: dict[str, list[dict]] = {}
    for record in gpushim.status():
        result = {**record.as_dict(), "verdict": None, "without": "", "with": ""}
        results.append(result)
        if record["target"] is None:  # what another distribution declared but cannot be used
            result["verdict"], result["without"] = PROBE_ERROR, record["reason"]
        elif record["state"] in (NOT_INSTALLED, DISABLED, OPT_IN):
            result["verdict"] = f"skipped: {record['state']}"
        elif record["state"] == NOT_BACKPORTED:  # the bug is there and stays: no probe can find the patch effective
            result["verdict"], result["without"] = CANNOT_RUN, record["reason"]
        else:
            libraries.setdefault(record["target"], []).append(result)
    _each_library_at_once(list(libraries.values()), say)
    return results


def _each_library_at_once(libraries: list[list[dict]], say: Callable[[str], None]) -> None:
    """Check each library's patches in a thread of its own, as many at once as there are processors.

    Their interpreters are independent, and waiting for them is most of a
    self-test; the progress comes out in library order, one library's
    lines held back until those before it are said, as if one ran after
    another.
    """
    channels: list[queue.Queue] = [queue.Queue() for _ in libraries]
    with ThreadPoolExecutor(max_workers=max(1, min(len(libraries), os.cpu_count() or 1))) as pool:
        checks = [pool.submit(_check_into, library, channel) for library, channel in zip(libraries, channels)]
        for check, channel in zip(checks, channels):
            for line in iter(channel.get, None):
                say(line)
            check.result()


def _check_into(library: list[dict], channel: queue.Queue) -> None:
    """:func:`_check` the library, its progress into ``channel``, then ``None``."""
    try:
        _check(library, channel.put)
    finally:
        channel.put(None)


def _check(library: list[dict], say: Callable[[str], None]) -> None:
    """Fill in the verdicts of one library's patches: their probes without them, then with them where the bug showed."""
    first = library[0]
    release = f"{first['distribution']} {first['installed_version']}" if first["distribution"] else first["target"]
    bugs = _state(release, "without", library, say)
    for result in library:
        if result["verdict"] is None and not bugs[result["id"]]:
            result["verdict"] = NOT_NEEDED
    showed = [result for result in library if result["verdict"] is None]
    if showed:
        still = _state(release, "with", showed, say)
        for result in showed:
            if result["verdict"] is None:
                result["verdict"] = NEEDED if still[result["id"]] else EFFECTIVE


def _state(release: str, state: str, results: list[dict], say: Callable[[str], None]) -> dict[str, bool]:
    """Run the probes of ``results`` in ``state``, fill in what they said; whether each bug showed."""
    if state == "without":
        doing = "1 probe without its patch" if len(results) == 1 else f"{len(results)} probes, each without its patch"
    else:
        doing = f"{len(results)} probe{'s' if len(results) > 1 else ''} with the patches"
    say(f"{release}: {doing} ...")
    started = time.monotonic()
    if state == "without":
        answers = _each_without_its_patch(results, say)
    else:
        answers = ask(WITH_THE_PATCHES, [result["id"] for result in results], _enabled(), say=say)
    showed = {}
    for result in results:
        answer = answers[result["id"]]
        result[state] = _what_the_probe_said(answer)
        if "error" in answer or "raised" in answer:
            result["verdict"] = PROBE_ERROR
        elif "cannot_run" in answer:
            result["verdict"] = CANNOT_RUN
        showed[result["id"]] = _bug(answer) is not None
    bugs = sum(showed.values())
    say(f"{release}: {bugs} of {len(results)} showed the bug {state} ({time.monotonic() - started:.1f} s)")
    return showed


def _each_without_its_patch(results: list[dict], say: Callable[[str], None]) -> dict[str, dict]:
    """The answers of the probes of ``results``, each with its own patch off and the others on.

    One interpreter for the library, where each patch is switched off around
    its probe; one of its own for each patch that would act before a module
    executes, disabled from the start.
    """
    registry = gpushim.registry()
    ids = [result["id"] for result in results]
    would_apply = {result["id"] for result in results if result["state"] in (INACTIVE, PENDING)}
    from_the_start = [id for id in ids if id in would_apply and registry[id].before is not None]
    around_the_probe = [id for id in ids if id not in from_the_start]
    answers = ask(EACH_WITHOUT_ITS_PATCH, around_the_probe, _enabled(), say=say)
    for id in from_the_start:
        answers.update(ask(GPUSHIM_FIRST, [id], {**_enabled(), "GPUSHIM_DISABLE": id}, say=say))
    return answers


def _enabled() -> dict[str, str]:
    """The switch that turns on the opt-in patches this process has on, for the probes' interpreters."""
    return {ENABLE: os.environ[ENABLE]} if os.environ.get(ENABLE) else {}


def summary(results: list[dict]) -> str:
    """``N effective, N not-needed, N needed``, then any other verdicts counted."""
    counts: dict[str, int] = {EFFECTIVE: 0, NOT_NEEDED: 0, NEEDED: 0}
    for result in results:
        verdict = "skipped" if result["verdict"].startswith("skipped") else result["verdict"]
        counts[verdict] = counts.get(verdict, 0) + 1
    return ", ".join(f"{count} {verdict}" for verdict, count in counts.items())
