"""warp.int64_atomic_add: ``atomic_add`` on int64 stores the minimum instead of the sum (NVIDIA/warp#977).

Kernels run on the CPU, 1024 threads each.  The corpus is one kernel of
every way to add to int64 atomically (and controls on other dtypes and on
``atomic_min``/``atomic_max``), in this file's Warp module, which each
release builds once per kernel cache.  The proofs that start interpreters
run on the lowest and highest affected release of the matrix only; the
faithful corpus, and the contract's probes, on every one.
"""

from __future__ import annotations

import pytest

from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp.int64_atomic_add import patch
from tests.support import corpus_in_fresh_python, gate, record_faithful
from tests.warp.kernel_cache import assert_builds_kept_apart, assert_rebuilt_in_process, kernel_cache
from tests.warp.nvrtc import assert_compiles_for_cuda

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True

THREADS = 1024
Vec2l = warp.types.vector(length=2, dtype=warp.int64)


@warp.func
def add_through_a_function(a: warp.array(dtype=warp.int64), value: warp.int64):
    warp.atomic_add(a, 6, value)


@warp.kernel
def adds(
    a: warp.array(dtype=warp.int64),
    olds: warp.array(dtype=warp.int64),
    grid: warp.array2d(dtype=warp.int64),
    vectors: warp.array(dtype=Vec2l),
    wide: warp.array(dtype=warp.uint64),
    narrow: warp.array(dtype=warp.int32),
):
    i = warp.tid()
    olds[i] = warp.atomic_add(a, 0, warp.int64(1))
    warp.atomic_sub(a, 1, warp.int64(2))
    a[2] += warp.int64(3)
    a[3] -= warp.int64(5)
    warp.atomic_max(a, 4, warp.int64(i))
    warp.atomic_min(a, 5, warp.int64(-i))
    add_through_a_function(a, warp.int64(11))
    warp.atomic_add(grid, i % 2, 1, warp.int64(7))
    warp.atomic_add(vectors, 0, Vec2l(warp.int64(1), warp.int64(-1)))
    warp.atomic_add(wide, 0, warp.uint64(1))
    warp.atomic_add(narrow, 0, 1)


def run_corpus() -> dict:
    """What each atomic operation left, and the sum of the old values ``atomic_add`` returned."""
    a = warp.zeros(7, dtype=warp.int64, device="cpu")
    olds = warp.zeros(THREADS, dtype=warp.int64, device="cpu")
    grid = warp.zeros((2, 2), dtype=warp.int64, device="cpu")
    vectors = warp.zeros(1, dtype=Vec2l, device="cpu")
    wide = warp.zeros(1, dtype=warp.uint64, device="cpu")
    narrow = warp.zeros(1, dtype=warp.int32, device="cpu")
    warp.launch(adds, dim=THREADS, inputs=[a, olds, grid, vectors, wide, narrow], device="cpu")
    values = a.numpy().tolist()
    return {
        "atomic_add(a, 0, 1)": values[0],
        "atomic_add(a, 0, 1) old values, summed": int(olds.numpy().sum()),
        "atomic_sub(a, 1, 2)": values[1],
        "a[2] += 3": values[2],
        "a[3] -= 5": values[3],
        "atomic_max(a, 4, i)": values[4],
        "atomic_min(a, 5, -i)": values[5],
        "atomic_add in a wp.func": values[6],
        "atomic_add(grid, i % 2, 1, 7)": grid.numpy().tolist(),
        "atomic_add on a vector of int64": vectors.numpy().tolist(),
        "atomic_add on uint64": wide.numpy().tolist(),
        "atomic_add on int32": narrow.numpy().tolist(),
    }


FIXED = {
    "atomic_add(a, 0, 1)": THREADS,
    "atomic_add(a, 0, 1) old values, summed": THREADS * (THREADS - 1) // 2,
    "atomic_sub(a, 1, 2)": -2 * THREADS,
    "a[2] += 3": 3 * THREADS,
    "a[3] -= 5": -5 * THREADS,
    "atomic_max(a, 4, i)": THREADS - 1,
    "atomic_min(a, 5, -i)": 1 - THREADS,
    "atomic_add in a wp.func": 11 * THREADS,
    "atomic_add(grid, i % 2, 1, 7)": [[0, 7 * THREADS // 2], [0, 7 * THREADS // 2]],
    "atomic_add on a vector of int64": [[THREADS, -THREADS]],
    "atomic_add on uint64": [THREADS],
    "atomic_add on int32": [THREADS],
}
# What 1.7.2 to 1.9.x leave where they differ: the minimum of what was stored and each operand.
# (``a[i] += x`` on int64 arrays is generated as ``a[i] = a[i] + x`` there, and is right.)
RELEASED = {
    "atomic_add(a, 0, 1)": 0,
    "atomic_add(a, 0, 1) old values, summed": 0,
    "atomic_sub(a, 1, 2)": -2,
    "atomic_add in a wp.func": 0,
    "atomic_add(grid, i % 2, 1, 7)": [[0, 0], [0, 0]],
    "atomic_add on a vector of int64": [[0, -1]],
}


SCRIPT = """
import sys
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def count(a: warp.array(dtype=warp.int64)):
    warp.atomic_add(a, 0, warp.int64(1))


KERNEL = count


def run():
    a = warp.zeros(1, dtype=warp.int64, device="cpu")
    warp.launch(count, dim=1024, inputs=[a], device="cpu")
    print("@@values", a.numpy().tolist(), flush=True)
"""
WRONG, RIGHT = "[0]", "[1024]"


@pytest.fixture(scope="module")
def cache_script(tmp_path_factory):
    return kernel_cache(tmp_path_factory.mktemp("int64_atomic_add"), SCRIPT)


@GATE.ends_only
def test_needed_int64_atomic_adds_store_the_minimum_without_gpushim():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "")
    assert state == "inactive"
    assert outcomes == {**FIXED, **RELEASED}


@GATE.ends_only
def test_effective_with_gpushim_imported_before_warp():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "import gpushim.auto")
    assert (outcomes, state) == (FIXED, "applied")


@GATE.ends_only
def test_a_kernel_built_by_an_earlier_process_without_gpushim_is_not_reused(cache_script):
    assert_builds_kept_apart(cache_script, WRONG, RIGHT)


@GATE.ends_only
def test_a_kernel_built_in_this_process_before_gpushim_patch_is_rebuilt(cache_script):
    assert_rebuilt_in_process(cache_script, WRONG, RIGHT)


@GATE.ends_only
def test_the_cuda_build_compiles_the_corrected_module_with_nvrtc(gpushim_patched):
    assert_compiles_for_cuda(warp, adds, patch)


@GATE.unaffected_only
def test_harmless_outside_the_range_warps_module_headers_hold_none_of_its_code(gpushim_patched):
    codegen = codegen_and_context(warp)[0]
    assert not any(patch.id in getattr(codegen, name) for name in ("cpu_module_header", "cuda_module_header"))


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(request):
    """Recorded patched on affected releases and unpatched on 1.10.1; the matrix compares the files."""
    if GATE.affected:
        request.getfixturevalue("gpushim_patched")
    outcomes = run_corpus()
    record_faithful(patch, outcomes)
    assert outcomes == FIXED
