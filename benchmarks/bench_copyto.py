"""What cupy.copyto_python_scalar adds to each ``cupy.copyto`` call the bug does not touch, in microseconds.

Run it with the Python of an environment that has CuPy 13.2.0, NumPy 2 and gpushim:

    python benchmarks/bench_copyto.py

Three arms, interleaved, each the fastest of several batches: CuPy's own ``copyto``, the same
function under a wrapt wrapper that does nothing (what any gpushim wrapper costs), and the
patched one.  The patch's own share is patched minus do-nothing wrapper; the target is 0.25
microsecond or less.  Printed, never asserted.

Inputs take paths the bug does not touch and that end in the copy kernel, which is replaced by
a recorder that does nothing, so the figures are CuPy's Python work and the wrapper's: an array
into an array under a ``where`` mask (without a mask CuPy's array path asks the CUDA runtime for
the device, which needs a GPU), and a NumPy scalar.  Without a CUDA device the arrays get memory
nobody touches; with one they get real memory, which the recorder never writes.  The patched
Python-scalar path is timed too, for information: it is the path that raises without the patch.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cupy  # noqa: E402
import numpy  # noqa: E402
import wrapt  # noqa: E402

import gpushim  # noqa: E402
from gpushim.device import cuda_present
from gpushim.patches.cupy.copyto_python_scalar import patch  # noqa: E402
from tests.cupy.copyto_corpus import dry_device  # noqa: E402

BATCH = 300
ROUNDS = 200


def fastest_per_call_us(arms: dict, args: tuple, kwargs: dict) -> dict:
    """Per-call microseconds of each arm: the fastest of ROUNDS batches, arms interleaved."""
    best = dict.fromkeys(arms, float("inf"))
    for _ in range(ROUNDS):
        for name, function in arms.items():
            start = time.perf_counter_ns()
            for _ in range(BATCH):
                function(*args, **kwargs)
            best[name] = min(best[name], (time.perf_counter_ns() - start) / BATCH / 1000)
    return best


def report(label: str, times: dict) -> None:
    cupy_us, wrapper_us, patched_us = times["cupy"], times["do-nothing wrapper"], times["patched"]
    print(
        f"{label}: cupy {cupy_us:.2f} us, do-nothing wrapt wrapper {wrapper_us:.2f} us, patched {patched_us:.2f} us"
        f" per call (ratios 1 : {wrapper_us / cupy_us:.2f} : {patched_us / cupy_us:.2f})"
    )
    print(
        f"  added per call: {patched_us - cupy_us:.2f} us in all, of which wrapt {wrapper_us - cupy_us:.2f} us "
        f"and the patch's own code {patched_us - wrapper_us:.2f} us"
    )


def main() -> None:
    print(f"{Path(__file__).name}: {__doc__.splitlines()[0]}")
    gpushim.patch(patch.id)
    record = next(record for record in gpushim.status() if record["id"] == patch.id)
    if record["state"] == "not-affected":
        print(f"{patch.id} is not-affected here ({record['reason']}): nothing to measure")
        return
    if record["state"] != "applied":
        raise SystemExit(f"{patch.id} is {record['state']} here ({record['reason']})")
    patched = cupy.copyto
    original = patched.__wrapped__
    arms = {
        "cupy": original,
        "do-nothing wrapper": wrapt.FunctionWrapper(
            original, lambda wrapped, instance, args, kwargs: wrapped(*args, **kwargs)
        ),
        "patched": patched,
    }
    print(
        f"{record['distribution']} {record['installed_version']}, NumPy {numpy.__version__}, "
        f"Python {sys.version.split()[0]}, CUDA device: {cuda_present()}"
    )
    with dry_device():
        dst, src, mask = cupy.empty((4, 3), "float32"), cupy.empty((3,), "float32"), cupy.empty((4, 3), "bool")
        report("copyto(array, array, where=mask)", fastest_per_call_us(arms, (dst, src), {"where": mask}))
        report("copyto(array, numpy.float32)", fastest_per_call_us(arms, (dst, numpy.float32(2.5)), {}))
        alone = fastest_per_call_us({"patched": patched}, (dst, 2.5), {})["patched"]
        print(f"copyto(array, 2.5), patched only (raises without the patch): {alone:.2f} us per call")


if __name__ == "__main__":
    main()
