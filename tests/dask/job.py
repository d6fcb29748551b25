"""A Dask job, run by tests/dask/test_recipe.py: two tasks on a local cluster of worker processes.

``config`` on its command line activates gpushim in the workers the way the
recipe of docs/dask.md does in Python, with Dask's worker preload set in its config
before the cluster starts; ``environment`` leaves that to the
``DASK_DISTRIBUTED__WORKER__PRELOAD`` variable the test sets; ``plain`` does
neither.  Each task runs in a worker process of its own, imports Warp (on the
CPU) and prints that process's id and gpushim's state for
``warp.cai_missing_strides``.  The job itself never imports Warp or activates
gpushim, so the workers have only what Dask gives them to go by.  The cluster
listens on loopback alone and is closed whatever happens.
"""

from __future__ import annotations

import os
import sys

import dask
from distributed import Client, LocalCluster

PATCH = "warp.cai_missing_strides"
RECIPE = {"distributed.worker.preload": ["gpushim.auto"]}


def state() -> tuple[int, str]:
    import warp  # noqa: F401

    import gpushim

    return os.getpid(), gpushim.record(PATCH)["state"]


def main(how: str) -> None:
    if how == "config":
        dask.config.set(RECIPE)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None)
    try:
        with Client(cluster) as client:
            workers = sorted(client.scheduler_info()["workers"])
            for address in [cluster.scheduler_address, *workers]:
                assert address.startswith("tcp://127.0.0.1:"), f"{address} is not on loopback"
            tasks = [client.submit(state, workers=[worker], pure=False) for worker in workers]
            for pid, reached in client.gather(tasks):
                print("@@state", pid, reached, flush=True)
    finally:
        cluster.close()
    assert "warp" not in sys.modules, "the job itself imported Warp"


if __name__ == "__main__":
    main(*sys.argv[1:])
