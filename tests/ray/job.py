"""A Ray job, run by tests/ray/test_recipe.py: two tasks on a local Ray, each in a fresh worker.

With ``recipe`` on its command line it starts Ray with the README's
``runtime_env``, with ``plain`` without it.  Each task imports Warp (on the
CPU) and prints its worker's process id and gpushim's state for
``warp.cai_missing_strides``.  The job itself never imports Warp or activates
gpushim, so the workers have only the environment Ray gives them to go by.
Ray runs on loopback alone, in the temporary folder named second on the
command line, and is shut down whatever happens.
"""

from __future__ import annotations

import os
import sys

import ray

from gpushim.launcher import BOOTSTRAP

PATCH = "warp.cai_missing_strides"
RECIPE = {"env_vars": {"GPUSHIM_AUTO": "1", "PYTHONPATH": BOOTSTRAP + ":${PYTHONPATH}"}}


@ray.remote(num_cpus=1, max_calls=1)
def state() -> tuple[int, str]:
    import warp  # noqa: F401

    import gpushim

    return os.getpid(), gpushim.record(PATCH)["state"]


def main(how: str, temporary: str) -> None:
    ray.init(
        num_cpus=2,
        runtime_env=RECIPE if how == "recipe" else None,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        _temp_dir=temporary,
    )
    try:
        gcs = ray.get_runtime_context().gcs_address
        assert gcs.startswith("127.0.0.1:"), f"Ray's GCS listens on {gcs}, not on loopback"
        for pid, reached in ray.get([state.remote(), state.remote()], timeout=120):
            print("@@state", pid, reached, flush=True)
    finally:
        ray.shutdown()
    assert "warp" not in sys.modules, "the job itself imported Warp"


if __name__ == "__main__":
    main(*sys.argv[1:])
