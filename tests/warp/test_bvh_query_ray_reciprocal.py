"""warp.bvh_query_ray_reciprocal: ``wp.bvh_query_ray`` reports the boxes a ray crosses (NVIDIA/warp#288).

Three unit boxes in a row along x, at x = 0, 2 and 4, and rays along and
against x, diagonal, from inside a box, pointing away and passing by; each
reports the boxes its query visits, on the CPU.
"""

from __future__ import annotations

from gpushim.patches.warp.bvh_query_ray_reciprocal import patch
from tests.support import gate
from tests.warp.overlay_checks import OverlayChecks

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
    index = int(0)  # noqa: UP018  (a variable Warp lets bvh_query_next write, not a constant)
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


class TestBvhQueryRayReciprocal(OverlayChecks):
    patch, gate, corpus, kernel = patch, GATE, __name__, hits
    fixed, released = FIXED, RELEASED
    script, wrong, right = SCRIPT, WRONG, RIGHT
