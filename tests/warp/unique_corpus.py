"""Kernel factories with ``module="unique"`` for warp.unique_module_collisions, run in a fresh interpreter.

Unique modules are registered for the life of a process, so each run of the
corpus needs an interpreter of its own: ``python -m tests.warp.unique_corpus
[gpushim first|gpushim after]`` prints the outcomes as one JSON line, and
Warp's own line for each module it loads, compiled or cached.  Its
annotations are evaluated as written (no ``from __future__ import
annotations``): Warp reads a struct's through a module that runpy leaves
out of ``sys.modules``.
"""

import json
import sys
from typing import Any

if "gpushim first" in sys.argv:
    import gpushim.auto  # noqa: F401
import warp

if "gpushim after" in sys.argv:
    import gpushim.auto  # noqa: F401


def captured_value(scale):
    @warp.kernel(module="unique")
    def scaled(out: warp.array(dtype=float)):
        out[warp.tid()] = scale

    return scaled


def deferred_static(values):
    @warp.kernel(module="unique", enable_backward=False)
    def unrolled(out: warp.array(dtype=int)):
        if warp.tid() == 0:
            for i in range(warp.static(len(values))):
                out[i] = warp.static(values[i])

    return unrolled


def deferred_static_through_a_helper(values):
    """A factory that also makes a ``@wp.func`` of its own: a new function, with a new native name, per call."""

    @warp.func
    def doubled(x: int):
        return 2 * x

    @warp.kernel(module="unique", enable_backward=False)
    def unrolled_through_helper(out: warp.array(dtype=int)):
        for i in range(warp.static(len(values))):
            out[i] = doubled(warp.static(values[i]))

    return unrolled_through_helper


@warp.func
def plus_one(x: float):
    return x + 1.0


@warp.func
def times_ten(x: float):
    return x * 10.0


def captured_func(f):
    @warp.kernel(module="unique")
    def calling(out: warp.array(dtype=float)):
        out[warp.tid()] = f(2.0)

    return calling


def generic_closure(f):
    @warp.kernel(module="unique")
    def generic_calling(out: warp.array(dtype=Any)):
        out[warp.tid()] = f(2.0)

    return generic_calling


@warp.struct
class WriterAData:
    out: warp.array(dtype=int)


@warp.struct
class WriterBData:
    out: warp.array(dtype=int)


@warp.func
def writer_a(value: int, data: WriterAData, index: int):
    data.out[index] = value + 1


@warp.func
def writer_b(value: int, data: WriterBData, index: int):
    data.out[index] = value + 2


def generic_writer(writer):
    """Upstream's GH-1231 case: the captured callees take two struct types, so the generic argument differs too."""

    @warp.kernel(module="unique")
    def writing(values: warp.array(dtype=int), data: Any):
        writer(values[warp.tid()], data, warp.tid())

    return writing


def launched(kernel, size, dtype):
    out = warp.zeros(size, dtype=dtype, device="cpu")
    try:
        warp.launch(kernel, dim=1, inputs=[out], device="cpu")
    except Exception as error:  # a collision that the release notices only at launch
        return f"raises {type(error).__name__}"
    return out.numpy().tolist()


def written(writer, data_type):
    data = data_type()
    data.out = warp.zeros(3, dtype=int, device="cpu")
    values = warp.array([1, 2, 3], dtype=int, device="cpu")
    try:
        warp.launch(generic_writer(writer), dim=3, inputs=[values, data], device="cpu")
    except Exception as error:
        return f"raises {type(error).__name__}"
    return data.out.numpy().tolist()


def run_corpus() -> dict:
    """What each factory's kernels write, launched in turn, and which declarations give one kernel.

    Five modules are compiled (patched; two unpatched, where kernels collide); the other kernels are
    declared only.
    """
    return {
        "deferred wp.static(values[i])": [
            launched(deferred_static(values), 2, int) for values in ([100, 200], [999, 200], [999, 888])
        ],
        "generic kernel capturing plus_one, times_ten": [
            launched(generic_closure(f), 1, float) for f in (plus_one, times_ten)
        ],
        "generic kernel capturing writer_a, writer_b": [
            written(writer, data_type) for writer, data_type in ((writer_a, WriterAData), (writer_b, WriterBData))
        ],
        "the same values give one kernel": deferred_static([100, 200]) is deferred_static([100, 200]),
        "other values give other kernels": deferred_static([4, 5]) is not deferred_static([6, 5]),
        "another length gives another kernel": deferred_static([4, 5]) is not deferred_static([4, 5, 6]),
        "the same values through a new helper give one kernel": (
            deferred_static_through_a_helper([1, 2]) is deferred_static_through_a_helper([1, 2])
        ),
        "other values through a new helper give other kernels": (
            deferred_static_through_a_helper([1, 2]) is not deferred_static_through_a_helper([3, 2])
        ),
        "the same callee gives one generic kernel": generic_closure(times_ten) is generic_closure(times_ten),
        "captured values give other kernels": captured_value(2.0) is not captured_value(3.0),
        "the same captured value gives one kernel": captured_value(2.0) is captured_value(2.0),
        "captured callees give other kernels": captured_func(plus_one) is not captured_func(times_ten),
        "the same captured callee gives one kernel": captured_func(plus_one) is captured_func(plus_one),
    }


if __name__ == "__main__":
    warp.config.quiet = False  # Warp says whether it compiled each module or found it in the cache
    outcomes = run_corpus()
    import gpushim

    print("@@state", gpushim.record("warp.unique_module_collisions")["state"])
    print("@@outcomes", json.dumps(outcomes))
