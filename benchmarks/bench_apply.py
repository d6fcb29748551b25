"""What gpushim adds to the import of a target: the applying of its patches when the import ends.

Run it with the Python of an environment that has gpushim and the targets
(cupy-cuda12x 13.3.0, warp-lang 1.6.0, say):

    python benchmarks/bench_apply.py [cupy] [warp] [nvidia.dali] [--runs N]

For each target, fresh interpreters import it, alternately without gpushim
and with ``import gpushim.auto`` done first (outside the timed part, since
that import has its own budget: benchmarks/bench_import.py).  What is timed
is the CPU time of ``import <target>`` alone (CPU time, because wall time
on a shared machine measures the neighbours); with gpushim it includes the
callback that gates and applies the target's patches.  Printed: the minimum and the median
of each, their ratio, and the difference as a share of the target's import
(the goal of issue 14: at most 1 %); then that callback alone, timed from inside
the import (CPU time spent in gpushim's import hook), which a busy machine
disturbs far less than the difference of two imports.  A third arm imports
wrapt before the target, as any program that uses wrapt already has: its
callback is gpushim's own work, and the difference between the two
callbacks is what importing wrapt costs at that point (wrapt 2 imports
``asyncio`` and ``importlib.metadata``; wrapt 1 does not).  On a machine whose cores are shared the
minima are the figures to read.  The matrix runs it with the default of 3
interpreters per arm, to stay within seconds per cell; docs/performance.md's figures
use ``--runs 15``.

Then the modules: which modules are in ``sys.modules`` after ``import
<target>`` with gpushim that are not after it without gpushim.  The goal
is that they are gpushim's own and what ``import wrapt`` imports in a fresh
interpreter; anything else (say ``packaging``) is listed by name.  Printed,
never asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import title  # noqa: E402

TARGETS = ("cupy", "warp", "nvidia.dali")

# Bytecode is written on the first runs and read on the others, as in a user's environment.
ENVIRONMENT = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}

TIMED = """
import sys, time, json
callback = []
{prelude}
before = set(sys.modules)
start = time.process_time()
import {target}
elapsed = time.process_time() - start
print(json.dumps({{"seconds": elapsed, "callback": sum(callback), "modules": sorted(set(sys.modules) - before)}}))
"""

# The callback that applies the patches, timed from inside the import: gpushim's import
# hook runs it through its ``_executed``, looked up on the hook when the target is found.
TIMED_CALLBACK = """
import gpushim.auto
from gpushim.importhook import hooks
executed = hooks._executed
def timed_executed(name):
    start = time.process_time()
    try:
        return executed(name)
    finally:
        callback.append(time.process_time() - start)
hooks._executed = timed_executed
"""


OWN_WORK = "with wrapt imported first"
ARMS = {"without": "", "with": TIMED_CALLBACK, OWN_WORK: "import wrapt\n" + TIMED_CALLBACK}


def run(target: str, arm: str) -> dict:
    code = TIMED.format(target=target, prelude=ARMS[arm])
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENVIRONMENT)
    if result.returncode:
        raise SystemExit(f"import {target} failed:\n{result.stderr}")
    return json.loads(result.stdout.splitlines()[-1])


def imported_by_wrapt() -> set[str]:
    """The modules ``import wrapt`` brings into a fresh interpreter, wrapt's own included."""
    code = "import sys; before = set(sys.modules); import wrapt; print(' '.join(set(sys.modules) - before))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=ENVIRONMENT)
    return set(result.stdout.split())


def patches_applied(target: str) -> str:
    code = (
        f"import gpushim.auto, gpushim, {target}\n"
        f"print(', '.join(f\"{{r['id']}} {{r['state']}}\" for r in gpushim.status() if r['target'] == {target!r}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=ENVIRONMENT)
    return result.stdout.strip()


def bench(target: str, runs: int, wrapt_modules: set[str]) -> None:
    for arm in ARMS:
        run(target, arm)  # bytecode written, files in the page cache
    outcomes: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    for _ in range(runs):
        for arm in ARMS:
            outcomes[arm].append(run(target, arm))
    seconds = {arm: [outcome["seconds"] * 1000 for outcome in outcomes[arm]] for arm in ARMS}
    print(f"import {target}: {patches_applied(target) or 'no gpushim patch for it'}")
    for label, figure in (("minimum", min), ("median", statistics.median)):
        plain, shimmed = figure(seconds["without"]), figure(seconds["with"])
        added = shimmed - plain
        print(
            f"  {label:<7} without gpushim {plain:8.1f} ms, with {shimmed:8.1f} ms: "
            f"{shimmed / plain:.3f}x, applying {added:+.1f} ms = {added / plain:+.1%} of the import"
        )
    plain = statistics.median(seconds["without"])
    for arm in ("with", OWN_WORK):
        times = [outcome["callback"] * 1000 for outcome in outcomes[arm]]
        goal = " (gpushim's own work; goal: at most 1 %)" if arm == OWN_WORK else ""
        print(
            f"  gpushim's callback, timed inside the import, {arm}: minimum {min(times):.2f} ms, median "
            f"{statistics.median(times):.2f} ms = {statistics.median(times) / plain:.2%} of the median import "
            f"without gpushim{goal}"
        )
    modules_without = {module for outcome in outcomes["without"] for module in outcome["modules"]}
    modules_with = {module for outcome in outcomes["with"] for module in outcome["modules"]}
    extra = sorted(modules_with - modules_without)
    own = [module for module in extra if module.split(".")[0] == "gpushim"]
    by_wrapt = [module for module in extra if module in wrapt_modules]
    foreign = [module for module in extra if module not in own and module not in by_wrapt]
    print(f"  modules gpushim's apply imports that import {target} does not: {len(extra)}")
    print(f"    gpushim's own ({len(own)}): {', '.join(own) or '-'}")
    print(f"    what import wrapt imports ({len(by_wrapt)}): {', '.join(by_wrapt) or '-'}")
    print(f"    others ({len(foreign)}, the goal is none): {', '.join(foreign) or '-'}")


def main() -> None:
    print(title(__file__, __doc__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help=f"default: those of {', '.join(TARGETS)} installed")
    parser.add_argument("--runs", type=int, default=3, help="fresh interpreters per arm (default 3, for the matrix)")
    arguments = parser.parse_args()
    targets = arguments.targets or [target for target in TARGETS if _installed(target)]
    from importlib.metadata import version

    print(
        f"Python {sys.version.split()[0]}, wrapt {version('wrapt')}, "
        f"{arguments.runs} fresh interpreters per arm, arms alternating"
    )
    wrapt_modules = imported_by_wrapt()
    for target in targets:
        bench(target, arguments.runs, wrapt_modules)


def _installed(target: str) -> bool:
    try:
        return importlib.util.find_spec(target) is not None
    except ModuleNotFoundError:
        return False


if __name__ == "__main__":
    main()
