"""warp.bvh_query_ray_reciprocal: ``wp.bvh_query_ray`` reports the boxes a ray crosses (NVIDIA/warp#288).

Three unit boxes in a row along x, at x = 0, 2 and 4, and rays along and
against x, diagonal, from inside a box, pointing away and passing by; each
reports the boxes its query visits, on the CPU.
"""

from __future__ import annotations

import pytest

from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp.bvh_query_ray_reciprocal import patch
from tests.support import corpus_in_fresh_python, gate, record_faithful
from tests.warp.kernel_cache import assert_builds_kept_apart, assert_rebuilt_in_process, kernel_cache
from tests.warp.nvrtc import assert_compiles_for_cuda

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True

RAYS = {
    "along x": ((-1.0, 0.5, 0.5), (1.0, 0.0, 0.0)),
    "against x": ((7.0, 0.5, 0.5), (-1.0, 0.0, 0.0)),
    "pointing away": ((-1.0, 0.5, 0.5), (-1.0, 0.0, 0.0)),
    "diagonal": ((-1.0, -1.0, 0.5), (0.6, 0.8, 0.0)),
    "from inside box 1, along y": ((2.5, 0.5, 0.5), (0.0, 1.0, 0.0)),
    "passing by": ((-1.0, 5.0, 0.5), (1.0, 0.0, 0.0)),
}


@warp.kernel
def hits(
    bvh: warp.uint64,
    starts: warp.array(dtype=warp.vec3),
    directions: warp.array(dtype=warp.vec3),
    found: warp.array2d(dtype=int),
):
    ray = warp.tid()
    query = warp.bvh_query_ray(bvh, starts[ray], directions[ray])
    index = int(0)
    while warp.bvh_query_next(query, index):
        found[ray, index] = 1


def run_corpus() -> dict:
    """The boxes each ray's query reports."""
    lowers = warp.array([warp.vec3(2.0 * i, 0.0, 0.0) for i in range(3)], dtype=warp.vec3, device="cpu")
    uppers = warp.array([warp.vec3(2.0 * i + 1.0, 1.0, 1.0) for i in range(3)], dtype=warp.vec3, device="cpu")
    bvh = warp.Bvh(lowers, uppers)
    starts = warp.array([start for start, _ in RAYS.values()], dtype=warp.vec3, device="cpu")
    directions = warp.array([direction for _, direction in RAYS.values()], dtype=warp.vec3, device="cpu")
    found = warp.zeros((len(RAYS), 3), dtype=int, device="cpu")
    warp.launch(hits, dim=len(RAYS), inputs=[bvh.id, starts, directions, found], device="cpu")
    return {ray: [box for box, hit in enumerate(row) if hit] for ray, row in zip(RAYS, found.numpy().tolist())}


FIXED = {
    "along x": [0, 1, 2],
    "against x": [0, 1, 2],
    "pointing away": [],
    "diagonal": [0],
    "from inside box 1, along y": [1],
    "passing by": [],
}
# Where the releases up to 1.3.1 differ: the slab test multiplies by the direction.
RELEASED = {"along x": [], "against x": [], "diagonal": [], "from inside box 1, along y": [0, 1, 2]}


SCRIPT = """
import sys
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def hits(bvh: warp.uint64, found: warp.array(dtype=int)):
    query = warp.bvh_query_ray(bvh, warp.vec3(-1.0, 0.5, 0.5), warp.vec3(1.0, 0.0, 0.0))
    index = int(0)
    while warp.bvh_query_next(query, index):
        found[index] = 1


KERNEL = hits


def run():
    lowers = warp.array([warp.vec3(2.0 * i, 0.0, 0.0) for i in range(3)], dtype=warp.vec3, device="cpu")
    uppers = warp.array([warp.vec3(2.0 * i + 1.0, 1.0, 1.0) for i in range(3)], dtype=warp.vec3, device="cpu")
    bvh = warp.Bvh(lowers, uppers)
    found = warp.zeros(3, dtype=int, device="cpu")
    warp.launch(hits, dim=1, inputs=[bvh.id, found], device="cpu")
    print("@@values", found.numpy().tolist(), flush=True)
"""
WRONG, RIGHT = "[0, 0, 0]", "[1, 1, 1]"


@pytest.fixture(scope="module")
def cache_script(tmp_path_factory):
    return kernel_cache(tmp_path_factory.mktemp("bvh_query_ray_reciprocal"), SCRIPT)


@GATE.ends_only
def test_needed_rays_miss_boxes_they_cross_without_gpushim():
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
    assert_compiles_for_cuda(warp, hits, patch)


@GATE.unaffected_only
def test_harmless_outside_the_range_warps_module_headers_hold_none_of_its_code(gpushim_patched):
    codegen = codegen_and_context(warp)[0]
    assert not any(patch.id in getattr(codegen, name) for name in ("cpu_module_header", "cuda_module_header"))


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(request):
    """Recorded patched on affected releases and unpatched on 1.3.2; the matrix compares the files."""
    if GATE.affected:
        request.getfixturevalue("gpushim_patched")
    outcomes = run_corpus()
    record_faithful(patch, outcomes)
    assert outcomes == FIXED
