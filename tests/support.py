"""What the tests of real releases share: release gates, fresh interpreters, artefacts.

The tests under ``tests/<library>/`` run inside one nox matrix cell at a
time, a virtual environment with exactly one release of the library.  Each
test file decides from the installed release whether it is proving that a
patch is needed and effective (affected releases) or harmless (the others),
and records the outcomes of its corpus as artefacts that the final matrix
step (``tests/matrix``) compares with the first fixed release's.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from gpushim import Patch
from gpushim.releases import installed
from gpushim.releases import is_affected as _in_range

ARTEFACTS = Path(os.environ.get("GPUSHIM_ARTEFACTS", Path(__file__).parent.parent / ".artefacts"))


def installed_release(patch: Patch) -> tuple[str, str] | None:
    """``(distribution, version)`` of the patch's target in this environment, if any."""
    found = installed(patch.distributions)
    return found[0] if found else None


def is_affected(patch: Patch) -> bool:
    release = installed_release(patch)
    return release is not None and _in_range(release[1], patch.affected)


@contextlib.contextmanager
def applied(patch: Patch):
    """``patch`` applied (where this release is affected) inside a ``with`` block, undone after it."""
    import gpushim

    gpushim.patch(patch.id)
    try:
        yield
    finally:
        gpushim.unpatch(patch.id)


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter of this environment, without inherited GPUSHIM_* switches."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("GPUSHIM_")}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def record_faithful(patch: Patch, outcomes: object) -> Path:
    """Write this release's outcomes on a patch's corpus for the matrix to compare.

    Called by the same test on affected releases (with the patch applied) and
    on the reference release (where it is not), so equal files mean the
    patched old release behaves as the fixed one does.
    """
    import gpushim

    distribution, version = installed_release(patch)
    state = next(record["state"] for record in gpushim.status() if record["id"] == patch.id)
    path = ARTEFACTS / f"{patch.id}@{distribution}-{version}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"patch": patch.id, "release": f"{distribution} {version}", "state": state, "outcomes": outcomes}
    path.write_text(json.dumps(document, indent=1, sort_keys=True, default=repr) + "\n")
    return path
