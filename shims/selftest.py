"""``python -m gpushim selftest``: does gpushim do its job on this install?

For every patch whose target is installed, the patch's probe runs twice in
a fresh interpreter: once with that patch switched off (does this install
have the bug?) and once with it on (is the bug gone?).  The parent process
only starts subprocesses, so it never imports a target nor creates a CUDA
context.
"""

from __future__ import annotations

import os
import subprocess
import sys

import gpushim

BUG_SHOWS = 3
PROBE_BROKE = 4

NEEDED = "needed"
EFFECTIVE = "effective"
NOT_NEEDED = "not-needed"


def run_probe(id: str) -> None:
    """Run one probe in this interpreter and exit with what it found (the child's side)."""
    import gpushim.auto  # noqa: F401

    patch = gpushim.registry()[id]
    try:
        bug = patch.probe()
    except Exception as error:
        print(f"the probe itself failed: {type(error).__name__}: {error}")
        sys.exit(PROBE_BROKE)
    if bug:
        print(bug)
        sys.exit(BUG_SHOWS)
    sys.exit(0)


def _probe(id: str, patched: bool) -> tuple[bool, str]:
    """Whether the bug shows in a fresh interpreter, and what the probe said."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GPUSHIM_")}
    if not patched:
        env["GPUSHIM_DISABLE"] = id
    code = f"from gpushim.selftest import run_probe; run_probe({id!r})"
    child = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if child.returncode < 0:
        return True, f"the interpreter died of signal {-child.returncode}"
    if child.returncode in (0, BUG_SHOWS):
        said = child.stdout.strip().splitlines()  # the probe's answer is the last line it printed
        return child.returncode == BUG_SHOWS, said[-1] if said else ""
    said = (child.stdout + child.stderr).strip().splitlines()
    raise RuntimeError(f"the probe of {id} could not run: {' '.join(said[-3:])}")


def selftest() -> list[dict[str, str | None]]:
    """One record per patch: its status record plus ``verdict`` and what the probes showed."""
    results = []
    for record in gpushim.status():
        result = {**record, "verdict": None, "without": "", "with": ""}
        if record["state"] in ("not-installed", "disabled"):
            result["verdict"] = f"skipped: {record['state']}"
        else:
            bug_shows, result["without"] = _probe(record["id"], patched=False)
            if not bug_shows:
                result["verdict"] = NOT_NEEDED
            else:
                still_shows, result["with"] = _probe(record["id"], patched=True)
                result["verdict"] = NEEDED if still_shows else EFFECTIVE
        results.append(result)
    return results
