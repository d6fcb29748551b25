"""``gpushim selftest``: does gpushim do its job on this install?

For every patch whose library is installed, the patch's probe (a minimal
reproduction of its bug) runs in fresh interpreters: first without that
patch (does this install have the bug?), then, where the bug showed, with
it (is the bug gone?).  The parent process only starts subprocesses, so it
never imports a target nor creates a CUDA context.

Importing the library is most of a probe's cost, so one interpreter runs
the probes of one library in one state.  In both states gpushim is active
with every patch on, as in a user's process; in the ``without`` interpreter
each probe runs between ``gpushim.unpatch(id)`` and ``gpushim.patch(id)`` of
its own patch, so that only the probed patch is off, as when each probe had
an interpreter to itself with ``GPUSHIM_DISABLE=id``.  That rests on what the
contract test proves of every patch: ``unpatch()`` restores the identical
objects, and a patch applied after its library's import works as one
applied during it.  Turning all of a library's patches off instead would
let the probe of one bug trip over another of the same library.

A probe answers through a file named to its interpreter, one JSON line per
probe, never through standard output: libraries write there (Warp prints a
banner when it finds no CUDA driver).  When an interpreter does not end
cleanly (a probe crashed it, say), the answers of its group are discarded
and each of its probes runs again in an interpreter of its own, where
dying counts as the bug showing.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time

import gpushim

from .errors import ProbeCannotRun
from .interpreters import python_command
from .states import DISABLED, NOT_INSTALLED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional

NEEDED = "needed"
EFFECTIVE = "effective"
NOT_NEEDED = "not-needed"
PROBE_ERROR = "probe-error"
CANNOT_RUN = "cannot-run"  # the probe needs what this install lacks: no verdict, and no error of the patch
NO_BUG = "no bug"
TIMEOUT = 600


def run_probes(answers: str, state: str, ids: list[str]) -> None:
    """The child's side: run the probes of ``ids`` with gpushim active, appending one answer each to ``answers``.

    ``state`` is ``without`` (each patch off during its own probe) or ``with``.
    """
    gpushim.patch()
    with open(answers, "a") as channel:
        for id in ids:
            if state == "without":
                gpushim.unpatch(id)
            try:
                bug = gpushim.registry()[id].probe()
                answer = {"id": id, "bug": str(bug) if bug else None}
            except ProbeCannotRun as why:
                answer = {"id": id, "cannot_run": str(why)}
            except Exception as error:
                answer = {"id": id, "error": f"{type(error).__name__}: {error}"}
            if state == "without":
                gpushim.patch(id)
            channel.write(json.dumps(answer) + "\n")
            channel.flush()


def _interpreter(state: str, ids: list[str]) -> tuple[dict[str, dict], str, bool]:
    """The answers of one interpreter running the probes of ``ids`` in ``state``.

    Also what went wrong ("" if nothing), and whether the interpreter died of a signal.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("GPUSHIM_")}
    code = "import sys; from gpushim.selftest import run_probes; run_probes(sys.argv[1], sys.argv[2], sys.argv[3:])"
    descriptor, answers = tempfile.mkstemp(prefix="gpushim-selftest-", suffix=".jsonl")
    os.close(descriptor)
    try:
        try:
            child = subprocess.run(
                python_command(code, answers, state, *ids),
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            trouble, died = f"the interpreter did not finish within {TIMEOUT} s", False
        else:
            died = child.returncode < 0
            if died:
                trouble = f"the interpreter died of signal {-child.returncode}"
            elif child.returncode:
                said = child.stderr.strip().splitlines()
                trouble = f"the interpreter exited with status {child.returncode}: {' '.join(said[-3:])}"
            else:
                trouble = ""
        with open(answers) as channel:
            found = {answer["id"]: answer for answer in map(json.loads, channel.read().splitlines())}
    finally:
        os.unlink(answers)
    if not trouble and set(found) != set(ids):
        trouble = "the interpreter ended before every probe answered"
    return found, trouble, died


def _answer_in_an_interpreter_of_its_own(state: str, id: str) -> dict:
    """The answer of ``id``'s probe in an interpreter of its own.

    An interpreter that dies of a signal says that the bug shows, as a
    double free does; one that fails otherwise, that the probe could not run.
    """
    found, trouble, died = _interpreter(state, [id])
    if died:
        return {"id": id, "bug": found.get(id, {}).get("bug") or trouble}
    if trouble:
        return {"id": id, "error": trouble}
    return found[id]


def _run(state: str, ids: list[str], say: Callable[[str], None]) -> dict[str, dict]:
    """Answers for ``ids`` in ``state``: one interpreter for them all, one each if that one does not end cleanly."""
    if len(ids) > 1:
        found, trouble, _ = _interpreter(state, ids)
        if not trouble:
            return found
        say(f"{trouble}; running each probe in an interpreter of its own")
    return {id: _answer_in_an_interpreter_of_its_own(state, id) for id in ids}


def _what_the_probe_said(answer: dict) -> str:
    """The bug it described, else why it could not run, else that there was no bug."""
    return answer.get("bug") or answer.get("error") or answer.get("cannot_run") or NO_BUG


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
        elif record["state"] in (NOT_INSTALLED, DISABLED):
            result["verdict"] = f"skipped: {record['state']}"
        else:
            libraries.setdefault(record["target"], []).append(result)
    for library in libraries.values():
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
    return results


def _state(release: str, state: str, results: list[dict], say: Callable[[str], None]) -> dict[str, bool]:
    """Run the probes of ``results`` in ``state``, fill in what they said; whether each bug showed."""
    if state == "without":
        doing = "1 probe without its patch" if len(results) == 1 else f"{len(results)} probes, each without its patch"
    else:
        doing = f"{len(results)} probe{'s' if len(results) > 1 else ''} with the patches"
    say(f"{release}: {doing} ...")
    started = time.monotonic()
    answers = _run(state, [result["id"] for result in results], say)
    showed = {}
    for result in results:
        answer = answers[result["id"]]
        result[state] = _what_the_probe_said(answer)
        if "error" in answer:
            result["verdict"] = PROBE_ERROR
        elif "cannot_run" in answer:
            result["verdict"] = CANNOT_RUN
        showed[result["id"]] = bool(answer.get("bug"))
    bugs = sum(showed.values())
    say(f"{release}: {bugs} of {len(results)} showed the bug {state} ({time.monotonic() - started:.1f} s)")
    return showed


def summary(results: list[dict]) -> str:
    """``N effective, N not-needed, N needed``, then any other verdicts counted."""
    counts: dict[str, int] = {EFFECTIVE: 0, NOT_NEEDED: 0, NEEDED: 0}
    for result in results:
        verdict = "skipped" if result["verdict"].startswith("skipped") else result["verdict"]
        counts[verdict] = counts.get(verdict, 0) + 1
    return ", ".join(f"{count} {verdict}" for verdict, count in counts.items())
