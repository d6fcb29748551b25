"""What ``gpushim.status()`` and ``python -m gpushim status`` cost, with 10 and with 1,000 other distributions.

Run it with the Python of any environment that has gpushim:

    python benchmarks/bench_status.py [--build | --env PYTHON] [--runs N]

status(): a temporary directory holding N made-up ``*.dist-info`` folders
goes first on ``PYTHONPATH``, and fresh interpreters time, in CPU
milliseconds, the loading of every patch declaration (status() imports
each patch module; that is allowed, and printed apart), then ``status()``
with them loaded, first call (it lists ``sys.path`` and reads the
targets' ``METADATA``) and second call.  Once with gpushim's own patches,
once with 500 (generated ones added in a library of their own, as in
benchmarks/bench_import.py).  Goals (issue 14): at most 10 % slower with
1,000 folders than with 10, and at most 0.05 ms per patch.

The command: wall time of ``python -m gpushim status`` in fresh
interpreters (and their CPU time), against ``python -c pass``.  Goal:
under 150 ms in an environment with cupy-cuda12x 13.3.0, warp-lang 1.6.0
and nvidia-dali-cuda120 1.35.0.  By default the environment is this one;
``--build`` makes that environment with uv in a temporary directory (this
checkout installed into it), ``--env PYTHON`` or ``BENCH_STATUS_PYTHON``
names the interpreter of one already made.  On a machine whose cores are
shared, wall time measures the neighbours too: read the minimum.

Each status() figure is the minimum over several interpreters, the two
numbers of folders taking turns; each command figure a minimum or a median,
as it says.  Printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_import import copy_with_generated_patches  # noqa: E402
from timing import title  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RELEASES = ("cupy-cuda12x==13.3.0", "warp-lang==1.6.0", "nvidia-dali-cuda120==1.35.0", "numpy==2.2.6")
GENERATED = 500

# A complete declaration (bench_import's never loads its patches; status() does).
TEMPLATE = """from gpushim import Patch

patch = Patch(id="generated.patch_{index}", affected="<1", fixed_in="1", issue="-", fix="-", summary="-")


@patch.applier
def _apply(module, journal):
    pass


@patch.prober
def _probe():
    return None
"""

MEASURE = """
import json, time
clock = time.process_time
import gpushim
registry = gpushim.registry()
start = clock()
for id in registry.ids:
    registry[id]
load = clock() - start
start = clock()
records = gpushim.status()
first = clock() - start
start = clock()
gpushim.status()
second = clock() - start
print(json.dumps({"load": load, "first": first, "second": second, "patches": len(records)}))
"""

# Bytecode is written on the first run and read on the others, as in a user's environment.
ENVIRONMENT = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def made_up_folders(directory: Path, folders: int) -> None:
    for number in range(folders):
        info = directory / f"made_up_{number}-1.0.{number}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: made-up-{number}\nVersion: 1.0.{number}\n")


def measure(site: Path | None, runs: int) -> dict:
    """The figures of MEASURE with 10 and with 1,000 folders, the two alternating; minima over ``runs``."""
    with tempfile.TemporaryDirectory() as ten, tempfile.TemporaryDirectory() as thousand:
        directories = {10: ten, 1000: thousand}
        environments = {}
        for folders, directory in directories.items():
            made_up_folders(Path(directory), folders)
            path = [directory, str(site) if site else None, os.environ.get("PYTHONPATH")]
            environments[folders] = {**ENVIRONMENT, "PYTHONPATH": os.pathsep.join(filter(None, path))}
        outcomes: dict[int, list[dict]] = {folders: [] for folders in directories}
        for _ in range(runs + 1):
            for folders, environment in environments.items():
                result = subprocess.run(
                    [sys.executable, "-c", MEASURE], capture_output=True, text=True, check=True, env=environment
                )
                outcomes[folders].append(json.loads(result.stdout))
    return {
        folders: {key: min(outcome[key] for outcome in runs_[1:]) for key in runs_[0]}
        for folders, runs_ in outcomes.items()
    }


def status_figures(runs: int) -> None:
    print(f"status(), CPU time, minima of {runs} fresh interpreters, the two numbers of folders alternating:")
    with tempfile.TemporaryDirectory() as root:
        catalogues = {
            "gpushim's patches": None,
            f"{GENERATED} patches": copy_with_generated_patches(Path(root), GENERATED, TEMPLATE),
        }
        for label, site in catalogues.items():
            figures = measure(site, runs)
            for folders, figure in figures.items():
                patches = figure["patches"]
                print(
                    f"  {label}, {folders:>4} other dist-info folders: loading the {patches} declarations "
                    f"{figure['load'] * 1000:.2f} ms; status() {figure['first'] * 1000:.2f} ms on the first call = "
                    f"{figure['first'] * 1000 / patches:.4f} ms per patch (goal: at most 0.05), "
                    f"{figure['second'] * 1000 / patches:.4f} ms per patch on the next"
                )
            ratio = figures[1000]["first"] / figures[10]["first"]
            print(f"  {label}: first status() with 1,000 folders / with 10: {ratio:.2f}x (goal: at most 1.10)")


def timed(command: list[str], runs: int, environment: dict) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of ``command`` in ``runs`` fresh processes (after one to warm up)."""
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=environment)
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=environment)
        walls.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return walls, cpus


def command_figures(python: str, runs: int) -> None:
    installed = subprocess.run(
        [python, "-c", "import gpushim, json; print(json.dumps([record.as_dict() for record in gpushim.status()]))"],
        capture_output=True,
        text=True,
        check=True,
        env=ENVIRONMENT,
    )
    releases = sorted(
        {f"{r['distribution']} {r['installed_version']}" for r in json.loads(installed.stdout) if r["distribution"]}
    )
    print(f"python -m gpushim status, {runs} fresh processes, with {', '.join(releases) or 'no target installed'}:")
    cpu = {}
    for folders in (10, 1000):
        with tempfile.TemporaryDirectory() as directory:
            made_up_folders(Path(directory), folders)
            path = os.pathsep.join(filter(None, [directory, os.environ.get("PYTHONPATH")]))
            environment = {**ENVIRONMENT, "PYTHONPATH": path}
            commands = {"python -m gpushim status": [python, "-m", "gpushim", "status"]}
            if folders == 10:
                commands["python -c pass (for scale)"] = [python, "-c", "pass"]
            for label, command in commands.items():
                walls, cpus = timed(command, runs, environment)
                cpu[folders, label] = statistics.median(cpus)
                goal = " (goal: under 150 ms)" if "gpushim" in label else ""
                print(
                    f"  {folders:>4} other dist-info folders, {label}: wall minimum {min(walls):.0f} ms, "
                    f"median {statistics.median(walls):.0f} ms{goal}; CPU median {cpu[folders, label]:.0f} ms"
                )
    ratio = cpu[1000, "python -m gpushim status"] / cpu[10, "python -m gpushim status"]
    print(f"  python -m gpushim status, CPU with 1,000 folders / with 10: {ratio:.2f}x (goal: at most 1.10)")


def build(directory: Path) -> str:
    """An environment with the releases of issue 14 and this checkout, made with uv; its Python."""
    uv = shutil.which("uv")
    if uv is None:
        raise SystemExit("--build needs uv on PATH")
    venv = directory / "venv"
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([uv, "pip", "install", "-q", "--python", python, *RELEASES, str(ROOT)], check=True)
    return python


def main() -> None:
    print(title(__file__, __doc__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--build", action="store_true", help=f"time the command in a new env with {RELEASES}")
    where.add_argument("--env", metavar="PYTHON", help="time the command with this interpreter")
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per figure (default 5)")
    arguments = parser.parse_args()
    print(f"Python {sys.version.split()[0]}")
    status_figures(arguments.runs)
    python = arguments.env or os.environ.get("BENCH_STATUS_PYTHON")
    if arguments.build:
        with tempfile.TemporaryDirectory() as directory:
            command_figures(build(Path(directory)), arguments.runs)
    else:
        command_figures(python or sys.executable, arguments.runs)


if __name__ == "__main__":
    main()
