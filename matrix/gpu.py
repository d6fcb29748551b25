"""Run one cell's GPU tests on this machine, in this interpreter: ``python -m matrix.gpu --cell NAME``.

For a GPU host as it comes, often offline, with its own torch and CUDA.  The
cell's releases (``install``, ``no-deps``, and those of ``pip`` that the host
lacks), gpushim built from this checkout, and the test tools go with ``pip
install --target`` into a scratch folder put first on the path: from
``--wheelhouse DIR`` alone where given (``python -m matrix.wheelhouse``; wheels
in pieces are joined), from the index otherwise.  Nothing else is installed:
the producers that ``nox -s gpu`` adds (``gpu-install``, ``gpu-pip``) are the
host's, whatever it has, and the record says what it found.  Then the
contract's and the library's ``gpu`` tests run, and the self-test.

``--out`` receives the junit XML, the self-test's JSON and the record,
``CELL@DATE.json``: the cell, gpushim's commit, the device, driver and CUDA
version, Python, the releases found (the cell's and the producers), where they
differ from the cell's pins, and each patch's GPU tests passed, failed and
skipped.  Committed to ``matrix/gpu-runs/``, a record fills that cell's GPU
column in matrix/RESULTS.md.  Without a device all of it runs, and every GPU
test is skipped with the reason "no CUDA device".
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from matrix.cells import ARTEFACTS, MATRIX, TEST_TOOLS, load_cells
from matrix.wheelhouse import join

ROOT = MATRIX.parent
# The producers of the GPU tests' device memory, which the host brings, beside the releases a cell pins.
PRODUCERS = ("torch", "cupy", "pycuda", "jax")
# Each distribution's name and version, in the order of the path of the tests' interpreter.
VERSIONS = (
    "import importlib.metadata as m, json\n"
    "print(json.dumps([[d.metadata['Name'], d.version] for d in m.distributions()]))"
)
GPU_TEST_MODULE = re.compile(r"tests\.(\w+)\.test_gpu_(\w+)")
CONTRACT_CASE = re.compile(r"\[([\w.]+)\]$")


def install(spec: dict, target: Path, index: list[str]) -> None:
    pip = [sys.executable, "-m", "pip", "install", "--target", str(target), *index]
    subprocess.run([*pip, *spec["install"], str(ROOT), *TEST_TOOLS], check=True)
    if spec["no-deps"]:
        subprocess.run([*pip, "--no-deps", *spec["no-deps"]], check=True)
    missing = [requirement for requirement in spec["pip"] if not _on_host(requirement)]
    if missing:
        subprocess.run([*pip, *missing], check=True)


def _on_host(requirement: str) -> bool:
    try:
        importlib.metadata.version(_name(requirement))
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[\w.-]+", requirement).group()).lower()


def environment(target: Path) -> dict[str, str]:
    """This process's environment with ``target`` first on the path, and its CUDA libraries on the loader's."""
    env = dict(os.environ)
    for variable, folders in [("PYTHONPATH", [target]), ("LD_LIBRARY_PATH", sorted(target.glob("nvidia/*/lib")))]:
        env[variable] = os.pathsep.join([*map(str, folders), *filter(None, [env.get(variable)])])
    return env


def releases(spec: dict, env: dict[str, str]) -> dict[str, str]:
    """The version of each release the cell pins, and of each producer, that the tests' interpreter finds."""
    listed = json.loads(subprocess.run([sys.executable, "-c", VERSIONS], env=env, capture_output=True).stdout)
    found: dict[str, str] = {}
    for name, version in listed:
        if name:
            found.setdefault(_name(name), version)  # the first on the path is the one imported
    pinned = {_name(requirement) for requirement in _pins(spec)}
    return {name: version for name, version in sorted(found.items()) if name in pinned or name.startswith(PRODUCERS)}


def _pins(spec: dict) -> list[str]:
    return [*spec["install"], *spec["no-deps"], *spec["pip"], *spec["gpu-install"], *spec["gpu-pip"]]


def deviations(spec: dict, found: dict[str, str]) -> list[str]:
    """Each pin of the cell, its GPU producers' included, that the run did not have, with what it had instead."""
    return [
        f"{pin}: {found.get(_name(pin), 'not installed')}"
        for pin in _pins(spec)
        if "==" in pin and found.get(_name(pin)) != pin.split("==")[1]
    ]


def device() -> dict[str, str | None]:
    """Device 0's name, the driver's version and the CUDA version it supports, or None each without them.

    Asked of NVML, the driver's management library that ``nvidia-smi`` reads,
    so that neither torch nor a CUDA context is needed.
    """
    facts = dict.fromkeys(["device", "driver", "cuda"])
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return facts
    if nvml.nvmlInit_v2() != 0:
        return facts
    text, number, handle = ctypes.create_string_buffer(96), ctypes.c_int(), ctypes.c_void_p()
    if nvml.nvmlSystemGetDriverVersion(text, 96) == 0:
        facts["driver"] = text.value.decode()
    if nvml.nvmlSystemGetCudaDriverVersion(ctypes.byref(number)) == 0:
        facts["cuda"] = f"{number.value // 1000}.{number.value % 1000 // 10}"
    if nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0:
        if nvml.nvmlDeviceGetName(handle, text, 96) == 0:
            facts["device"] = text.value.decode()
    nvml.nvmlShutdown()
    return facts


def commit() -> str | None:
    """The checkout's commit, ``-dirty`` where it has changes; None outside a git checkout."""
    try:
        described = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return None
    return described.stdout.strip() or None


def outcomes(junit: Path) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """The run's tests passed, failed and skipped, in all and per patch.

    A test is the patch's where it is in ``tests/<library>/test_gpu_<patch>.py``
    (patch ``<library>.<patch>``), or is the contract's for that patch
    (``...[<library>.<patch>]``).
    """
    total = dict.fromkeys(["passed", "failed", "skipped"], 0)
    patches: dict[str, dict[str, int]] = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        outcome = "passed"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        total[outcome] += 1
        module, contract = GPU_TEST_MODULE.match(case.get("classname")), CONTRACT_CASE.search(case.get("name"))
        if module:
            patch = ".".join(module.groups())
        elif contract and case.get("classname").startswith("tests.contract."):
            patch = contract.group(1)
        else:
            continue
        patches.setdefault(patch, dict.fromkeys(total, 0))[outcome] += 1
    return total, dict(sorted(patches.items()))


def record(cell: str, spec: dict, found: dict[str, str], junit: Path) -> dict:
    total, patches = outcomes(junit)
    return {
        "cell": cell,
        "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "gpushim": commit(),
        **device(),
        "python": platform.python_version(),
        "releases": found,
        "deviations": deviations(spec, found),
        "tests": total,
        "patches": patches,
    }


def main(arguments: list[str] | None = None) -> int:
    cells = load_cells()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    gpu_cells = sorted(name for name, spec in cells.items() if spec["gpu"])
    parser.add_argument("--cell", required=True, choices=gpu_cells, metavar="CELL", help="a cell with gpu = true")
    parser.add_argument("--wheelhouse", type=Path, help="install from this folder alone (python -m matrix.wheelhouse)")
    parser.add_argument("--out", type=Path, default=ARTEFACTS / "gpu", help="where the results go (%(default)s)")
    options = parser.parse_args(arguments)
    cell, spec, out = options.cell, cells[options.cell], options.out.resolve()
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    if spec.get("python", python) != python:
        parser.error(f"cell {cell} runs on Python {spec['python']}, and this is Python {python}")
    out.mkdir(parents=True, exist_ok=True)
    junit = out / f"{cell}.xml"
    with tempfile.TemporaryDirectory(prefix="gpushim-gpu-") as scratch:
        target, index = Path(scratch) / "site", []
        if options.wheelhouse:
            join(options.wheelhouse, Path(scratch))
            index = ["--no-index", "--find-links", str(options.wheelhouse.resolve()), "--find-links", scratch]
        install(spec, target, index)
        env = environment(target)
        tests = [*spec["pytest"], "tests/contract", spec["tests"], f"--junitxml={junit}"]
        pytest = subprocess.run([sys.executable, "-m", "pytest", "-m", "gpu", "-rs", *tests], cwd=ROOT, env=env)
        with (out / f"{cell}.selftest.json").open("w") as output:
            command = [sys.executable, "-m", "gpushim", "selftest", "--json"]
            selftest = subprocess.run(command, cwd=ROOT, env=env, stdout=output)
        run = record(cell, spec, releases(spec, env), junit)
    path = out / f"{cell}@{run['date']}.json"
    path.write_text(json.dumps(run, indent=1) + "\n")
    print(f"matrix.gpu: {cell} on {run['device'] or 'no CUDA device'}, recorded in {path}")
    return pytest.returncode or selftest.returncode


if __name__ == "__main__":
    sys.exit(main())
