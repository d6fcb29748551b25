"""warp.reused_loop_index: an unrolled loop's index reused by a later loop loses its updates (NVIDIA/warp#1534).

Kernels run on the CPU.  The corpus is upstream's kernels for the fix, and
one whose later loop only reads the leftover index, all in this file's Warp
module, which each release builds once per kernel cache.  The proofs that
start interpreters run on the lowest and highest affected release of the
matrix only; the faithful corpus, and the contract's probes, on every one.
"""

from __future__ import annotations

import pytest

from gpushim.patches.warp.reused_loop_index import patch
from tests.support import corpus_in_fresh_python, gate, record_faithful
from tests.warp.kernel_cache import assert_builds_kept_apart, assert_rebuilt_in_process, kernel_cache
from tests.warp.nvrtc import assert_generates_other_cuda_that_compiles

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True


@warp.kernel
def redeclared_while(out: warp.array(dtype=warp.int32)):
    acc = warp.int32(0)
    for i in range(2):
        acc = acc + i
    i = warp.int32(0)
    while i < 3:
        acc = acc + 10
        i = i + 1
    out[0] = acc


@warp.kernel
def different_name(out: warp.array(dtype=warp.int32)):
    acc = warp.int32(0)
    for i in range(2):
        acc = acc + i
    j = warp.int32(0)
    while j < 3:
        acc = acc + 10
        j = j + 1
    out[1] = acc


@warp.kernel
def redeclared_bounded_while(out: warp.array(dtype=warp.int32)):
    s = warp.int32(0)
    for i in range(2):
        s = s + i
    i = warp.int32(0)
    k = warp.int32(0)
    while k < 3:
        i = i + 1
        k = k + 1
    out[2] = i


@warp.kernel
def redeclared_augassign(out: warp.array(dtype=warp.int32)):
    s = warp.int32(0)
    for i in range(2):
        s = s + i
    i = warp.int32(0)
    k = warp.int32(0)
    while k < 3:
        i += 1
        k += 1
    out[3] = i


@warp.kernel
def dynamic_for(n: int, out: warp.array(dtype=warp.int32)):
    acc = warp.int32(0)
    for i in range(2):
        acc = acc + i
    for i in range(n):
        acc = acc + i
    out[4] = acc


@warp.kernel
def reassigned_in_dynamic_for(n: int, out: warp.array(dtype=warp.int32)):
    acc = warp.int32(0)
    for i in range(3):
        acc = acc + i
    for d in range(n):
        i = d * 2
        acc = acc + i
    out[5] = acc


@warp.kernel
def leftover_incremented(out: warp.array(dtype=warp.int32)):
    s = warp.int32(0)
    for i in range(2):
        s = s + i
    k = warp.int32(0)
    while k < 3:
        i = i + 1
        k = k + 1
    out[6] = i


@warp.kernel
def leftover_augassign(out: warp.array(dtype=warp.int32)):
    s = warp.int32(0)
    for i in range(2):
        s = s + i
    k = warp.int32(0)
    while k < 3:
        i += 1
        k += 1
    out[7] = i


@warp.kernel
def leftover_through_a_local(out: warp.array(dtype=warp.int32)):
    s = warp.int32(0)
    for i in range(2):
        s = s + i
    k = warp.int32(0)
    while k < 3:
        tmp = i
        i = tmp + 1
        k = k + 1
    out[8] = i


@warp.kernel
def leftover_only_read(n: int, out: warp.array(dtype=warp.int32)):
    acc = warp.int32(0)
    for i in range(3):
        acc = acc + i
    for d in range(n):
        for j in range(i):
            acc = acc + j * d
    out[9] = acc


# Each kernel's name, by the element of ``out`` it writes.
KERNELS = [
    redeclared_while,
    different_name,
    redeclared_bounded_while,
    redeclared_augassign,
    dynamic_for,
    reassigned_in_dynamic_for,
    leftover_incremented,
    leftover_augassign,
    leftover_through_a_local,
    leftover_only_read,
]
FIXED = {
    "redeclared_while": 31,
    "different_name": 31,
    "redeclared_bounded_while": 3,
    "redeclared_augassign": 3,
    "dynamic_for": 4,
    "reassigned_in_dynamic_for": 9,
    "leftover_incremented": 4,
    "leftover_augassign": 4,
    "leftover_through_a_local": 4,
    "leftover_only_read": 6,
}
# What 1.4.2 to 1.15.x give where they differ.
RELEASED = {
    "redeclared_while": 0,
    "redeclared_bounded_while": 1,
    "redeclared_augassign": 1,
    "leftover_incremented": 2,
    "leftover_augassign": 2,
    "leftover_through_a_local": 2,
}


def run_corpus() -> dict:
    """Each kernel's result, by the kernel's name."""
    out = warp.zeros(len(KERNELS), dtype=warp.int32, device="cpu")
    for kernel in KERNELS:
        inputs = [3, out] if "n" in kernel.adj.arg_types else [out]
        warp.launch(kernel, dim=1, inputs=inputs, device="cpu")
    return {kernel.key.rpartition(".")[2]: value for kernel, value in zip(KERNELS, out.numpy().tolist())}


SCRIPT = """
import sys
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def same_name(out: warp.array(dtype=warp.int32)):
    acc = warp.int32(0)
    for i in range(2):
        acc = acc + i
    i = warp.int32(0)
    while i < 3:
        acc = acc + 10
        i = i + 1
    out[0] = acc


KERNEL = same_name


def run():
    out = warp.zeros(1, dtype=warp.int32, device="cpu")
    warp.launch(same_name, dim=1, inputs=[out], device="cpu")
    print("@@values", out.numpy().tolist(), flush=True)
"""
WRONG, RIGHT = "[0]", "[31]"


@pytest.fixture(scope="module")
def cache_script(tmp_path_factory):
    return kernel_cache(tmp_path_factory.mktemp("reused_loop_index"), SCRIPT)


@GATE.ends_only
def test_needed_the_reused_index_loses_its_updates_without_gpushim():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "")
    assert state == "inactive"
    assert {name: outcomes[name] for name in RELEASED} == RELEASED
    assert {name: outcomes[name] for name in FIXED if name not in RELEASED} == {
        name: value for name, value in FIXED.items() if name not in RELEASED
    }


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
def test_the_cuda_build_compiles_the_patched_code_with_nvrtc():
    assert_generates_other_cuda_that_compiles(warp, redeclared_while, patch)


@GATE.unaffected_only
def test_harmless_outside_the_range_nothing_of_it_is_in_place(gpushim_patched):
    """Warp's loop generators may be other patches' wrappers (``warp.while_condition_load`` before 1.4), not its."""
    assert gpushim_patched.registry().journal(patch.id) is None


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(request):
    """Recorded patched on affected releases and unpatched on 1.16.0; the matrix compares the files."""
    if GATE.affected:
        request.getfixturevalue("gpushim_patched")
    outcomes = run_corpus()
    record_faithful(patch, outcomes)
    assert outcomes == FIXED
