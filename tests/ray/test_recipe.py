"""The README's Ray recipe, on a real local Ray with a real Warp release.

tests/ray/job.py starts Ray on this machine (two CPUs, loopback only) and
runs two tasks, each in a worker process of its own that imports Warp and
reports the patch's state: ``applied`` with the recipe's ``runtime_env``,
``inactive`` without it.  Each job runs in a process group of its own, killed
whole if it outlives its time; the tests skip where Ray is not installed.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from gpushim.patches.warp.cai_missing_strides import patch
from tests.support import gate, states_of_tasks

pytest.importorskip("ray")
GATE = gate(patch)

JOB = str(Path(__file__).with_name("job.py"))
TIMEOUT = 240
APPLIED = "applied" if GATE.affected else "not-affected"


def states_reported(how: str) -> list[str]:
    """The states that the job's two tasks report, each from a worker process other than the job's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GPUSHIM_", "RAY_"))}
    # No usage reports leave the machine, and the cluster's token stays out of ~/.ray.
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16))
    # Ray's single-machine mode: every Ray process listens and connects on loopback alone (without it the
    # cluster's own services talk over the host's network address).
    env.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    # Ray's socket paths must stay short: a folder of its own directly under the temporary one.
    temporary = tempfile.mkdtemp(prefix="gpushim-ray-")
    try:
        return states_of_tasks([sys.executable, JOB, how, temporary], env, TIMEOUT, "Ray job")
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def test_the_readme_recipe_patches_every_task():
    assert states_reported("recipe") == [APPLIED, APPLIED]


@GATE.affected_only
def test_without_the_recipe_the_tasks_are_left_unpatched():
    assert states_reported("plain") == ["inactive", "inactive"]
