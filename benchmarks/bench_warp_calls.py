"""What warp.from_dlpack_bool and warp.array_copy_false_reference add to each call, in microseconds.

Run it with the Python of an environment that has an affected Warp and gpushim:

    python benchmarks/bench_warp_calls.py

(Warp 1.3.0 to 1.3.2 get both patches; 1.4 to 1.15 only the first.)  Each figure
is the fastest of several batches, the arms interleaved, and is printed, never
asserted.  The rule: a patch's own code costs at most 0.25 us per call beyond
wrapt's do-nothing wrapper on paths the bug does not touch.

- ``wp.from_dlpack`` of a float32 NumPy tensor, with ``dtype=None`` (through
  ``dtype_from_dlpack``) and with ``dtype=wp.float32`` (through
  ``dtype_is_compatible``): Warp's own functions, the same under a wrapt wrapper
  that does nothing, and the patched ones; end to end, then the dtype function
  alone on the same DLPack dtype, where a fraction of a microsecond is visible.
- ``wp.array(numpy_array, device="cpu", copy=False)``, the path the second patch
  exists for, and ``wp.array(ptr=...)``, which passes only its ``__init__`` wrapper.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import warp  # noqa: E402
import wrapt  # noqa: E402

import gpushim  # noqa: E402
from gpushim.patches.warp import array_copy_false_reference, from_dlpack_bool  # noqa: E402

BATCH = 200
ROUNDS = 150


def passthrough(wrapped, instance, args, kwargs):
    return wrapped(*args, **kwargs)


def fastest_per_call_us(arms: dict, call) -> dict:
    """Per-call microseconds of ``call()`` under each arm: the fastest of ROUNDS batches, arms interleaved.

    An arm is a function that installs its version of the patched names.  The cyclic
    garbage collector is off while a batch runs, as in ``timeit``: with Warp loaded,
    one of its passes costs more than a whole batch.
    """
    best = dict.fromkeys(arms, float("inf"))
    for _ in range(ROUNDS):
        for name, install in arms.items():
            install()
            gc.collect()
            gc.disable()
            start = time.perf_counter_ns()
            for _ in range(BATCH):
                call()
            elapsed = time.perf_counter_ns() - start
            gc.enable()
            best[name] = min(best[name], elapsed / BATCH / 1000)
    return best


def report(label: str, times: dict) -> None:
    warp_us, wrapper_us, patched_us = times["warp"], times["do-nothing wrapper"], times["patched"]
    print(
        f"{label}: warp {warp_us:.2f} us, under a do-nothing wrapt wrapper {wrapper_us:.2f} us, "
        f"patched {patched_us:.2f} us per call\n"
        f"  added: {patched_us - warp_us:.2f} us in all, of which wrapt {wrapper_us - warp_us:.2f} us "
        f"and the patch's own code {patched_us - wrapper_us:.2f} us"
    )


def arms_for(owner, names: tuple[str, ...]) -> dict:
    """Install Warp's originals, do-nothing wrappers of them, or the patched objects on ``owner``."""
    patched = {name: vars(owner)[name] for name in names}
    original = {name: patched[name].__wrapped__ for name in names}
    idle = {name: wrapt.FunctionWrapper(original[name], passthrough) for name in names}

    def installer(objects):
        return lambda: [setattr(owner, name, objects[name]) for name in names]

    return {"warp": installer(original), "do-nothing wrapper": installer(idle), "patched": installer(patched)}


def state(patch) -> str:
    return next(record["state"] for record in gpushim.status() if record["id"] == patch.id)


def bench_from_dlpack() -> None:
    module = sys.modules.get("warp._src.dlpack") or sys.modules["warp.dlpack"]
    names = ("dtype_from_dlpack", "dtype_is_compatible")
    arms = arms_for(module, names)
    tensor = np.arange(16, dtype=np.float32)
    report("wp.from_dlpack(float32 tensor)", fastest_per_call_us(arms, lambda: warp.from_dlpack(tensor)))
    report(
        "wp.from_dlpack(float32 tensor, dtype=wp.float32)",
        fastest_per_call_us(arms, lambda: warp.from_dlpack(tensor, dtype=warp.float32)),
    )
    dl_dtype = module.DLDataType()
    dl_dtype.type_code, dl_dtype.bits, dl_dtype.lanes = 2, 32, 1  # kDLFloat, 32 bits
    report(
        "  dtype_from_dlpack(float32) alone",
        fastest_per_call_us(arms, lambda: module.dtype_from_dlpack(dl_dtype)),
    )
    report(
        "  dtype_is_compatible(float32, wp.float32) alone",
        fastest_per_call_us(arms, lambda: module.dtype_is_compatible(dl_dtype, warp.float32)),
    )
    arms["patched"]()


def bench_array() -> None:
    array = warp.types.array
    arms = arms_for(array, ("__init__", "_init_from_data"))
    source = np.arange(16, dtype=np.float32)
    report(
        "wp.array(numpy_array, device='cpu', copy=False)",
        fastest_per_call_us(arms, lambda: warp.array(source, dtype=warp.float32, device="cpu", copy=False)),
    )
    pointer = source.ctypes.data
    report(
        "wp.array(ptr=..., device='cpu')",
        fastest_per_call_us(arms, lambda: warp.array(ptr=pointer, dtype=warp.float32, shape=(16,), device="cpu")),
    )
    arms["patched"]()


def main() -> None:
    warp.config.quiet = True
    warp.init()
    gpushim.patch(from_dlpack_bool.patch.id, array_copy_false_reference.patch.id)
    print(f"warp-lang {warp.config.version}, NumPy {np.__version__}, Python {sys.version.split()[0]}")
    for patch, bench in ((from_dlpack_bool.patch, bench_from_dlpack), (array_copy_false_reference.patch, bench_array)):
        if state(patch) == "applied":
            bench()
        else:
            print(f"{patch.id} is {state(patch)} here: nothing to measure")


if __name__ == "__main__":
    main()
