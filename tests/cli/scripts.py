"""Helpers of the command tests: the installed console scripts and installs made of metadata.

The commands run as a user runs them, through the console scripts of this
environment, in subprocesses without inherited ``GPUSHIM_*`` switches.  A
library "installed" here is its distribution metadata alone, which is all
``status``, ``freeze`` and ``patches`` read; nothing imports it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(sys.executable).parent
# Releases the catalogue patches; what each test expects of them is read from `gpushim status --json`.
RELEASES = {"cupy-cuda12x": "13.3.0", "warp-lang": "1.6.0"}


def environment(**variables: str) -> dict[str, str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("GPUSHIM_", "PYTEST_"))}
    return {**clean, **variables}


def command(name: str, *arguments: str, env: dict[str, str] | None = None, **options) -> subprocess.CompletedProcess:
    """Run the console script ``name`` of this environment."""
    options = {"capture_output": True, "text": True, "timeout": 300, **options}
    if "stdout" in options or "stderr" in options:
        options.pop("capture_output")
    return subprocess.run([str(SCRIPTS / name), *arguments], env=env or environment(), **options)


def write_distribution(root: Path, distribution: str, version: str | None) -> None:
    """The metadata of an installed ``distribution`` under ``root``."""
    dist_info = root / f"{distribution.replace('-', '_')}-{version or '0'}.dist-info"
    dist_info.mkdir(parents=True)
    field = f"Version: {version}\n" if version is not None else ""
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\n{field}")


def status(env: dict[str, str]) -> list[dict]:
    """The status records, as ``gpushim status --json`` prints them in ``env``."""
    finished = command("gpushim", "status", "--json", env=env)
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout)
