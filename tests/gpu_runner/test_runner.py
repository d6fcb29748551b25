"""``python -m matrix.gpu`` on a machine without a device and without an index: it still runs, installs the cell
from the wheelhouse alone, skips every GPU test with "no CUDA device", and records so.

The cell is made up to stay cheap: its release is warp-lang 1.6.0 as metadata
alone (as tests/cli installs releases), enough for the contract to check each
Warp patch, whose GPU test is then skipped.  The wheelhouse is
``python -m matrix.wheelhouse``'s for the rest (the test tools, what gpushim
is built with and needs), from the index, with its wheels over 1 MiB in pieces.
"""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ElementTree
import zipfile
from pathlib import Path

import pytest

import gpushim
from matrix import gpu, results, wheelhouse
from tests.gpu import NO_DEVICE, PRESENT

CELL = {
    "install": ["warp-lang==1.6.0"],
    "no-deps": [],
    "pip": [],
    "gpu-install": ["cupy-cuda12x==13.4.1"],
    "gpu-pip": [],
    "gpu": True,
    "tests": "tests/contract",
    "pytest": [],
}
on_the_cpu = pytest.mark.skipif(PRESENT, reason="a CUDA device is present: the GPU tests would run")


def write_release(folder: Path, distribution: str, version: str) -> None:
    """A wheel of ``distribution`` that installs its metadata and nothing else."""
    info = f"{distribution.replace('-', '_')}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{distribution.replace('-', '_')}-{version}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, int]:
    """One offline run of the made-up cell: its ``--out`` folder and exit status."""
    house, out = tmp_path_factory.mktemp("wheelhouse"), tmp_path_factory.mktemp("out")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(wheelhouse, "load_cells", lambda: {"cell": {**CELL, "install": []}})
        wheelhouse.main(["--cell", "cell", "--python-version", python, "--split-mib", "1", str(house)])
        write_release(house, "warp-lang", "1.6.0")
        for variable in os.environ:
            if variable.startswith(("PIP_", "PYTEST_", "GPUSHIM_")):
                monkeypatch.delenv(variable)
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # the wheelhouse alone, whatever this machine's pip says
        monkeypatch.setattr(gpu, "load_cells", lambda: {"cell": CELL})
        status = gpu.main(["--cell", "cell", "--wheelhouse", str(house), "--out", str(out)])
    assert any(house.glob("*.whl.part001")), "no wheel was cut into pieces"
    return out, status


@on_the_cpu
def test_every_gpu_test_is_skipped_for_want_of_a_device(run):
    out, _ = run
    cases = list(ElementTree.parse(out / "cell.xml").getroot().iter("testcase"))
    assert cases
    assert {case.find("skipped").get("message") for case in cases} == {NO_DEVICE}


@on_the_cpu
def test_the_record_says_what_ran_where_and_each_patchs_tests(run):
    out, _ = run
    (path,) = out.glob("cell@*.json")
    record = json.loads(path.read_text())
    assert (record["device"], record["driver"], record["cuda"]) == (None, None, None)
    assert record["releases"] == {"warp-lang": "1.6.0"}
    assert record["deviations"] == ["cupy-cuda12x==13.4.1: not installed"]
    warp = [id for id in gpushim.registry().ids if id.startswith("warp.")]
    assert record["patches"] == {id: {"passed": 0, "failed": 0, "skipped": 1} for id in sorted(warp)}


@on_the_cpu
def test_the_self_test_ran_and_its_failure_fails_the_run(run):
    out, status = run
    verdicts = {result["id"]: result["verdict"] for result in json.loads((out / "cell.selftest.json").read_text())}
    # Warp's probes cannot import a release of metadata alone; a probe that needs a CUDA 13 driver first says so,
    # and an opt-in patch not turned on is not probed.
    warp = {verdicts[id] for id in verdicts if id.startswith("warp.")}
    assert warp == {"probe-error", "cannot-run", "skipped: opt-in"}
    assert status == 1


def test_a_test_counts_for_the_patch_of_its_module_or_of_its_contract_case(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.contract.test_contract.TestContract" name="test_on_a_device[warp.empty_slice]"/>'
        '<testcase classname="tests.warp.test_gpu_empty_slice" name="test_needed"><failure message="no"/></testcase>'
        '<testcase classname="tests.warp.test_gpu_empty_slice" name="test_effective[1]"><skipped message="s"/>'
        "</testcase>"
        '<testcase classname="" name="tests.warp.test_empty_slice"><skipped message="collection skipped"/></testcase>'
        "</testsuite></testsuites>"
    )
    total, patches = gpu.outcomes(junit)
    assert total == {"passed": 1, "failed": 1, "skipped": 2}
    assert patches == {"warp.empty_slice": {"passed": 1, "failed": 1, "skipped": 1}}


def test_results_read_each_cells_last_run_per_patch(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "GPU_RUNS", tmp_path)
    for date, passed in [("2026-11-26", 1), ("2026-12-01", 2)]:
        run = {"cell": "warp-1.6.0", "date": date, "device": "NVIDIA H200", "tests": {}}
        run["patches"] = {"warp.empty_slice": {"passed": passed, "failed": 0, "skipped": 0}}
        (tmp_path / f"warp-1.6.0@{date}.json").write_text(json.dumps(run))
    run = results.gpu_runs()["warp-1.6.0"]
    assert results._gpu(run, "warp.empty_slice") == "2 passed, 0 failed, 0 skipped (2026-12-01, NVIDIA H200)"
    assert results._gpu(run, "warp.sgd_argument_order") == "no GPU test"
    assert results._gpu(None, "warp.empty_slice") == "not run"
