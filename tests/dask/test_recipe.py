"""The README's Dask recipe, on a real local cluster of worker processes with a real Warp release.

tests/dask/job.py starts a ``LocalCluster`` of two worker processes on this
machine (loopback only) and runs one task on each, which imports Warp and
reports the patch's state: ``applied`` with the recipe, set either in Dask's
config or in the environment, and ``inactive`` without it.  Each job runs in
a process group of its own, killed whole if it outlives its time; the tests
skip where Dask's distributed scheduler is not installed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gpushim.patches.warp.cai_missing_strides import patch
from tests.support import gate

pytest.importorskip("distributed")
GATE = gate(patch)

JOB = str(Path(__file__).with_name("job.py"))
TIMEOUT = 120
APPLIED = "applied" if GATE.affected else "not-affected"


def states_reported(how: str, **variables: str) -> list[str]:
    """The states that the job's two tasks report, each from a worker process other than the job's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GPUSHIM_", "DASK_"))}
    env.update(variables)
    job = subprocess.Popen(
        [sys.executable, JOB, how],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = job.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        stdout, stderr = job.communicate()
        pytest.fail(f"the Dask job took more than {TIMEOUT} s:\n{stderr[-3000:]}")
    assert job.returncode == 0, stderr[-3000:]
    reports = [line.split()[1:] for line in stdout.splitlines() if line.startswith("@@state")]
    assert len({pid for pid, _ in reports}) == len(reports) == 2
    assert str(job.pid) not in {pid for pid, _ in reports}
    return [state for _, state in reports]


def test_the_readme_recipe_in_dask_config_patches_every_worker():
    assert states_reported("config") == [APPLIED, APPLIED]


def test_the_readme_recipe_in_the_environment_patches_every_worker():
    preload = json.dumps(["gpushim.auto"])
    assert states_reported("environment", DASK_DISTRIBUTED__WORKER__PRELOAD=preload) == [APPLIED, APPLIED]


@GATE.affected_only
def test_without_the_recipe_the_workers_are_left_unpatched():
    assert states_reported("plain") == ["inactive", "inactive"]
