"""warp.overload_array_dtype: overloads that differ only in an array's dtype resolve to the first one built.

Kernels run on the CPU, each generic kernel declared when the corpus runs
(Warp does not build a module again in the process where its build failed):
upstream's case, ``vec3`` then ``float``; ``float`` then ``vec3``; one dtype
only; and ``float`` against ``float64``.  Each records what each launch
writes, or the type of what it raises.
"""

from __future__ import annotations

from typing import Any

from gpushim.patches.warp.overload_array_dtype import patch
from tests.support import answer_in_fresh_python, applied, assert_unchanged_by, gate, record_corpus
from tests.warp.kernel_cache import assert_builds_kept_apart, kernel_cache
from tests.warp.nvrtc import assert_generates_other_cuda_that_compiles

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True
warp.init()


@warp.func
def doubled(b: warp.array(dtype=Any), i: int):
    return b[i] * 2.0


def overloaded(a: warp.array(dtype=Any), b: warp.array(dtype=Any)):
    i = warp.tid()
    a[i] = doubled(b, i)


ARRAYS = {
    "vec3": lambda: [warp.array([(2.0, 3.0, 4.0)], dtype=warp.vec3, device="cpu") for _ in range(2)],
    "float": lambda: [warp.array([value], dtype=float, device="cpu") for value in (5.0, 6.0)],
    "float64": lambda: [warp.array([value], dtype=warp.float64, device="cpu") for value in (5.0, 7.0)],
}
ORDERS = [("vec3", "float"), ("float", "vec3"), ("float",), ("float", "float64")]


def launches(order) -> list:
    """What a kernel declared now writes at each launch of ``order``, or the type of what the launch raises."""
    kernel = warp.kernel(overloaded)
    written = []
    for name in order:
        a, b = ARRAYS[name]()
        try:
            warp.launch(kernel, dim=1, inputs=[a, b], device="cpu")
        except Exception as error:  # noqa: BLE001 - the corpus records what the release raises
            written.append(type(error).__name__)
        else:
            written.append(a.numpy().tolist())
    return written


def run_corpus() -> dict:
    return {" then ".join(order): launches(order) for order in ORDERS}


SCRIPT = """
import sys
from typing import Any

import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def scaled(a: warp.array(dtype=Any)):
    a[0] = a[0] * 2.0


KERNEL = scaled


def run():
    a = warp.array([3.0], dtype=float, device="cpu")
    warp.launch(scaled, dim=1, inputs=[a], device="cpu")
    print("@@values", a.numpy().tolist(), flush=True)
"""


@GATE.ends_only
def test_needed_a_float_overload_after_a_vec3_one_is_refused_without_gpushim():
    code = f"from {__name__} import launches\noutcome = launches(('vec3', 'float'))"
    assert answer_in_fresh_python(code, "outcome") == [[[4.0, 6.0, 8.0]], "RuntimeError"]


@GATE.affected_only
def test_effective_each_overload_resolves_by_its_dtype_with_gpushim():
    with applied(patch):
        assert launches(("vec3", "float")) == [[[4.0, 6.0, 8.0]], [12.0]]


@GATE.ends_only
def test_builds_with_and_without_gpushim_are_kept_apart_in_the_cache(tmp_path):
    """A kernel the release builds right gives the same values both ways, from builds of their own."""
    assert_builds_kept_apart(kernel_cache(tmp_path, SCRIPT), "[6.0]", "[6.0]")


@GATE.ends_only
def test_the_cuda_build_compiles_the_patched_code_with_nvrtc():
    kernel = warp.kernel(overloaded)
    for dtype in (warp.vec3, float):
        warp.overload(kernel, [warp.array(dtype=dtype), warp.array(dtype=dtype)])
    assert_generates_other_cuda_that_compiles(warp, kernel, patch)


@GATE.unaffected_only
def test_harmless_outside_the_range_types_equal_stays_the_releases():
    assert_unchanged_by(patch, warp.types, ("types_equal",))


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.4.2; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert outcomes["vec3 then float"] == [[[4.0, 6.0, 8.0]], [12.0]]
