"""gpushim reaches the processes a job starts, with no code edit, on a real Warp release.

tests/warp/job.py starts a multiprocessing spawn child, a ``subprocess.run``
of ``sys.executable``, or a ``ProcessPoolExecutor`` worker; that process
imports Warp (on the CPU) and reports the patch's state.  The job runs
under ``gpushim-run``, or with only the environment that schedulers can set.
What it proves is gpushim's reach, not a release's behaviour: it runs where
the patch applies and in its reference release, which show both states.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpushim.launcher import BOOTSTRAP
from gpushim.patches.warp.cai_missing_strides import patch
from tests.support import gate

GATE = gate(patch)
pytestmark = GATE.recorded_only

JOB = str(Path(__file__).with_name("job.py"))
KINDS = ["spawn", "subprocess", "pool"]
APPLIED = "applied" if GATE.affected else "not-affected"
LAUNCHED = {
    "gpushim-run": ([sys.executable, "-m", "gpushim", "run"], {}),
    "environment": ([], {"PYTHONPATH": BOOTSTRAP, "GPUSHIM_AUTO": "1"}),
    "neither": ([], {}),
}


def states_reported(kind: str, launched: str, **switches: str) -> list[str]:
    """The states that the process of ``kind`` started by the job reports."""
    launcher, variables = LAUNCHED[launched]
    env = {key: value for key, value in os.environ.items() if not key.startswith("GPUSHIM_")}
    finished = subprocess.run(
        [*launcher, sys.executable, JOB, kind],
        env={**env, **variables, **switches},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert finished.returncode == 0, finished.stderr
    return [line.split()[1] for line in finished.stdout.splitlines() if line.startswith("@@state")]


@pytest.mark.parametrize("launched", ["gpushim-run", "environment"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_patch_reaches_the_process(kind, launched):
    assert states_reported(kind, launched) == [APPLIED]


@pytest.mark.parametrize("kind", KINDS)
def test_the_opt_out_reaches_the_process(kind):
    assert states_reported(kind, "gpushim-run", GPUSHIM_DISABLE=patch.id) == ["disabled"]


@GATE.affected_only
def test_without_either_the_process_is_left_unpatched():
    assert states_reported("spawn", "neither") == ["inactive"]
