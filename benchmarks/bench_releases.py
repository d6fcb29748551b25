"""What finding releases costs, with 10 and with 1,000 other distributions installed.

Run it with the Python of any environment that has gpushim:

    python benchmarks/bench_releases.py

A temporary directory holding N made-up ``*.dist-info`` folders goes first on
``PYTHONPATH``, and fresh interpreters time, in CPU milliseconds:

- the first ``gpushim.releases.installed()`` of every patch's distributions,
  with ``is_affected`` for each (what ``import <target>`` pays once);
- ``gpushim.status()``, first and second call, per patch (issue 14: at most
  0.05 ms per patch, and at most 10 % slower with 1,000 folders than with 10);
- for scale, ``importlib.metadata.version()`` of the same distributions.

Each figure is the median of several interpreters.  Printed, never asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RUNS = 7

MEASURE = """
import json, time
clock = time.process_time
start = clock()
from gpushim import releases
import gpushim
patches = gpushim.registry().patches
distributions = sorted({name for patch in patches for name in patch.distributions})
start = clock()
for patch in patches:
    for name, version in releases.installed(patch.distributions):
        if version is not None:
            releases.is_affected(version, patch.affected)
gate = clock() - start
start = clock()
records = gpushim.status()
first = clock() - start
start = clock()
gpushim.status()
second = clock() - start
from importlib import metadata
start = clock()
for name in distributions:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
reference = clock() - start
print(json.dumps({"gate": gate, "first": first / len(records), "second": second / len(records),
                  "importlib": reference, "patches": len(records)}))
"""

# Bytecode is written on the first run and read on the others, as in a user's environment.
ENVIRONMENT = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def measure(folders: int) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        for number in range(folders):
            info = Path(directory, f"made_up_{number}-1.0.{number}.dist-info")
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: made-up-{number}\nVersion: 1.0.{number}\n")
        environment = {
            **ENVIRONMENT,
            "PYTHONPATH": os.pathsep.join(filter(None, [directory, os.environ.get("PYTHONPATH")])),
        }
        runs = []
        for _ in range(RUNS + 1):
            result = subprocess.run(
                [sys.executable, "-c", MEASURE], capture_output=True, text=True, check=True, env=environment
            )
            runs.append(json.loads(result.stdout))
    return {key: statistics.median(run[key] for run in runs[1:]) for key in runs[0]}


def main() -> None:
    print(f"Python {sys.version.split()[0]}; medians of {RUNS} fresh interpreters, CPU time")
    figures = {folders: measure(folders) for folders in (10, 1000)}
    for folders, figure in figures.items():
        print(
            f"  {folders:>5} other dist-info folders: gating all {figure['patches']} patches "
            f"{figure['gate'] * 1000:.2f} ms; status() {figure['first'] * 1000:.3f} ms per patch on the first call, "
            f"{figure['second'] * 1000:.3f} ms on the next; importlib.metadata.version() of the same names "
            f"{figure['importlib'] * 1000:.2f} ms"
        )
    ratio = figures[1000]["first"] / figures[10]["first"]
    print(f"  status() with 1,000 folders / with 10: {ratio:.2f}x (goal: at most 1.10)")


if __name__ == "__main__":
    main()
