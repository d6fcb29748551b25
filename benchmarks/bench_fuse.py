"""What cupy.fuse_python_scalar adds to ``cupy.fuse`` calls that work without it.

Run it with the Python of an environment with an affected CuPy and NumPy 2
(cupy-cuda12x 13.3.0 and numpy 2.2.6, say) and gpushim:

    python benchmarks/bench_fuse.py

The patch binds ``cupy._core.fusion.numpy`` to a stand-in, so every
``numpy.<name>`` the fusion module looks up goes through it: on a cached
call, ``numpy.generic`` once per argument that is not a CuPy array; in a
trace, dozens.  The goal (issue 14) is a cached call with a scalar argument
at most 1.10 times the unpatched one.  Three arms, interleaved, each the
fastest of several batches:

- unpatched: the fusion module's ``numpy`` is NumPy;
- ``__getattr__`` stand-in: what the patch bound before issue 14, an object
  whose Python ``__getattr__`` forwarded every lookup to NumPy (kept here as
  the yardstick);
- patched: what ``gpushim.patch()`` binds now.

Without a GPU the fused kernel cannot run: the first call traces and
caches it and then fails to launch, and the cached entry's kernel is then
swapped for a function that does nothing.  What is timed is everything
``Fusion.__call__`` does before the launch, the part the patch can touch;
a real launch adds microseconds to every arm, so on a GPU the ratios are
closer to 1.  Printed, never asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cupy  # noqa: E402
import numpy  # noqa: E402
from cupy._core import _fusion_thread_local, fusion  # noqa: E402
from timing import fastest_per_call_us, print_arms, title  # noqa: E402

import gpushim  # noqa: E402
from gpushim.patches.cupy._memory import untouched_memory  # noqa: E402
from gpushim.patches.cupy.fuse_python_scalar import patch  # noqa: E402


class GetattrStandIn:
    """The stand-in before issue 14: a Python ``__getattr__`` on every lookup."""

    __slots__ = ("_numpy",)

    def __init__(self, numpy):
        object.__setattr__(self, "_numpy", numpy)

    def __getattr__(self, name):
        return getattr(self._numpy, name)


def axpy(a, x, y):
    return a * x + y


def launch_nothing(*args, **kwargs):
    return None


def cached(fused, args):
    """Trace and cache ``fused`` for ``args``, with a kernel that does nothing in the cache."""
    try:
        fused(*args)
    except cupy.cuda.runtime.CUDARuntimeError:
        pass
    else:
        raise SystemExit("a GPU ran the kernel: time a real call instead")
    for key, (_, kwargs) in list(fused._memo.items()):
        fused._memo[key] = (launch_nothing, kwargs)
    assert fused.new_fusion is None, "the first code generator gave up"


def trace(args):
    history = fusion._FusionHistory()
    local = _fusion_thread_local.thread_local
    local.history, local.is_old_fusing = history, True  # as Fusion.__call__ does
    try:
        history.get_fusion(axpy, args, "axpy")
    finally:
        local.history, local.is_old_fusing = None, False


def main() -> None:
    print(title(__file__, __doc__))
    gpushim.patch(patch.id)
    record = gpushim.record(patch.id)
    if record["state"] == "not-affected":
        print(f"{patch.id} is not-affected here ({record['reason']}): nothing to measure")
        return
    if record["state"] != "applied":
        raise SystemExit(f"{patch.id} is {record['state']} here ({record['reason']})")
    stand_in = fusion.numpy
    gpushim.unpatch(patch.id)
    assert fusion.numpy is numpy
    print(
        f"{record['distribution']} {record['installed_version']}, NumPy {numpy.__version__}, "
        f"Python {sys.version.split()[0]}"
    )
    cupy.cuda.set_allocator(untouched_memory(cupy))
    x, y = cupy.empty((1000,), "float32"), cupy.empty((1000,), "float32")
    bindings = {"unpatched": numpy, "__getattr__ stand-in (before)": GetattrStandIn(numpy), "patched": stand_in}

    def arm(binding, call):
        def ready():
            fusion.numpy = binding
            return call

        return ready

    try:
        for label, a in [("NumPy scalar", numpy.float32(2)), ("Python scalar", 2.0)]:
            fused = cupy.fuse()(axpy)
            cached(fused, (a, x, y))
            times = fastest_per_call_us(
                {name: arm(binding, fused) for name, binding in bindings.items()},
                lambda: (a, x, y),  # noqa: B023 (used within the iteration)
                batch=200,
                rounds=600,
            )
            print_arms(f"cached cupy.fuse call, {label} argument (no kernel launch)", times, "unpatched")
        args = (numpy.float32(2), x, y)
        times = fastest_per_call_us(
            {name: arm(binding, trace) for name, binding in bindings.items()}, lambda: (args,), batch=2, rounds=150
        )
        print_arms("first-path trace of a * x + y, NumPy scalar argument", times, "unpatched")
    finally:
        fusion.numpy = numpy


if __name__ == "__main__":
    main()
