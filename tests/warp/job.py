"""A stand-in for a training job, run by tests/warp/test_propagation.py.

It starts one process of the kind named on its command line (``spawn``,
``subprocess`` or ``pool``) and never imports gpushim or Warp itself, so
that the process it starts has only the environment to go by.  That process
imports Warp and prints gpushim's state for ``warp.cai_missing_strides``.
"""

import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

PATCH = "warp.cai_missing_strides"


def state() -> str:
    import warp  # noqa: F401

    import gpushim

    return next(record["state"] for record in gpushim.status() if record["id"] == PATCH)


def print_state() -> None:
    print("@@state", state(), flush=True)


def start(kind: str) -> int:
    if kind == "spawn":
        import multiprocessing

        child = multiprocessing.get_context("spawn").Process(target=print_state)
        child.start()
        child.join()
        return child.exitcode
    if kind == "subprocess":
        return subprocess.run([sys.executable, __file__, "report"]).returncode
    if kind == "pool":
        with ProcessPoolExecutor(1) as pool:
            print("@@state", pool.submit(state).result(), flush=True)
        return 0
    if kind == "report":
        print_state()
        return 0
    raise SystemExit(f"unknown kind of process {kind!r}")


if __name__ == "__main__":
    status = start(sys.argv[1])
    if sys.argv[1] != "report":
        assert "warp" not in sys.modules, "the job itself imported Warp"
    sys.exit(status)
