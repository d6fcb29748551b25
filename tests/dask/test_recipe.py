"""The Dask recipe of docs/dask.md, on a real local cluster of worker processes with a real Warp release.

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
import sys
from pathlib import Path

import pytest

from gpushim.patches.warp.cai_missing_strides import patch
from tests.support import gate, states_of_tasks

pytest.importorskip("distributed")
GATE = gate(patch)

JOB = str(Path(__file__).with_name("job.py"))
TIMEOUT = 120
APPLIED = "applied" if GATE.affected else "not-affected"


def states_reported(how: str, **variables: str) -> list[str]:
    """The states that the job's two tasks report, each from a worker process other than the job's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GPUSHIM_", "DASK_"))}
    return states_of_tasks([sys.executable, JOB, how], {**env, **variables}, TIMEOUT, "Dask job")


def test_the_readme_recipe_in_dask_config_patches_every_worker():
    assert states_reported("config") == [APPLIED, APPLIED]


def test_the_readme_recipe_in_the_environment_patches_every_worker():
    preload = json.dumps(["gpushim.auto"])
    assert states_reported("environment", DASK_DISTRIBUTED__WORKER__PRELOAD=preload) == [APPLIED, APPLIED]


@GATE.affected_only
def test_without_the_recipe_the_workers_are_left_unpatched():
    assert states_reported("plain") == ["inactive", "inactive"]
