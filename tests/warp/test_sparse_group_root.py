"""warp.sparse_group_root: a group's root spans its own boxes alone where group ids skip a number (NVIDIA/warp#1612).

Four unit boxes in two pairs far apart, grouped 0, 0, g, g for g = 2 (a
missing group between) and g = 1 (none missing), as a BVH and as a mesh of
one triangle per box; each query asks every box from one group's root, and a
ray along z through the third box from it, on the CPU.
"""

from __future__ import annotations

from gpushim.patches.warp.sparse_group_root import patch
from tests.support import gate
from tests.warp.overlay_checks import OverlayChecks

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True

CORNERS = [(0.0, 0.0, 0.0), (2.0, 0.0, 0.0), (100.0, 0.0, 0.0), (102.0, 0.0, 0.0)]
QUERIES = {  # name: (groups of the four boxes, the group asked)
    "group 0 of 0, 0, 2, 2": ((0, 0, 2, 2), 0),
    "group 2 of 0, 0, 2, 2": ((0, 0, 2, 2), 2),
    "group 1 of 0, 0, 2, 2 (missing)": ((0, 0, 2, 2), 1),
    "group 0 of 0, 0, 1, 1": ((0, 0, 1, 1), 0),
    "group 0 of 0, 0, 7, 7 in leaves of 4": ((0, 0, 7, 7), 0),
}


@warp.kernel
def boxes(bvh: warp.uint64, group: int, found: warp.array(dtype=int)):
    query = warp.bvh_query_aabb(
        bvh, warp.vec3(-10.0, -10.0, -10.0), warp.vec3(200.0, 10.0, 10.0), warp.bvh_get_group_root(bvh, group)
    )
    index = int(0)  # noqa: UP018  (a variable Warp lets bvh_query_next write, not a constant)
    while warp.bvh_query_next(query, index):
        found[index] = 1


@warp.kernel
def faces(mesh: warp.uint64, group: int, face: warp.array(dtype=int)):
    hit = warp.mesh_query_ray(
        mesh, warp.vec3(100.2, 0.2, -1.0), warp.vec3(0.0, 0.0, 1.0), 1.0e6, warp.mesh_get_group_root(mesh, group)
    )
    if hit.result:
        face[0] = hit.face


def run_corpus() -> dict:
    """The boxes a query from the group's root reports, and the face a ray through box 2 hits from it."""
    lowers = warp.array(CORNERS, dtype=warp.vec3, device="cpu")
    uppers = warp.array([(x + 1.0, 1.0, 1.0) for x, _, _ in CORNERS], dtype=warp.vec3, device="cpu")
    points = warp.array(
        [point for x, _, _ in CORNERS for point in ((x, 0.0, 0.0), (x + 1.0, 0.0, 0.0), (x, 1.0, 0.0))],
        dtype=warp.vec3,
        device="cpu",
    )
    indices = warp.array(list(range(12)), dtype=warp.int32, device="cpu")
    outcomes = {}
    for name, (ids, group) in QUERIES.items():
        leaf_size = 4 if "leaves of 4" in name else 1
        groups = warp.array(list(ids), dtype=warp.int32, device="cpu")
        bvh = warp.Bvh(lowers, uppers, groups=groups, leaf_size=leaf_size)
        mesh = warp.Mesh(points, indices, groups=groups, bvh_leaf_size=leaf_size)
        found = warp.zeros(4, dtype=int, device="cpu")
        face = warp.full(1, -1, dtype=int, device="cpu")
        warp.launch(boxes, dim=1, inputs=[bvh.id, group, found], device="cpu")
        warp.launch(faces, dim=1, inputs=[mesh.id, group, face], device="cpu")
        hits = [box for box, hit in enumerate(found.numpy().tolist()) if hit]
        outcomes[name] = [hits, int(face.numpy()[0])]
    return outcomes


FIXED = {
    "group 0 of 0, 0, 2, 2": [[0, 1], -1],
    "group 2 of 0, 0, 2, 2": [[2, 3], 2],
    "group 1 of 0, 0, 2, 2 (missing)": [[0, 1, 2, 3], 2],
    "group 0 of 0, 0, 1, 1": [[0, 1], -1],
    "group 0 of 0, 0, 7, 7 in leaves of 4": [[0, 1], -1],
}
# Where the releases from 1.11.0 to 1.15.x differ: group 0's root reaches the next group's boxes.
RELEASED = {
    "group 0 of 0, 0, 2, 2": [[0, 1, 2, 3], 2],
    "group 0 of 0, 0, 7, 7 in leaves of 4": [[0, 1, 2, 3], 2],
}


SCRIPT = """
import sys
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def boxes(bvh: warp.uint64, found: warp.array(dtype=int)):
    query = warp.bvh_query_aabb(bvh, warp.vec3(-10.0), warp.vec3(10.0), warp.bvh_get_group_root(bvh, 0))
    index = int(0)
    while warp.bvh_query_next(query, index):
        found[index] = 1


KERNEL = boxes


def run():
    lowers = warp.array([warp.vec3(0.0, 0.0, 0.0), warp.vec3(2.0, 0.0, 0.0)], dtype=warp.vec3, device="cpu")
    uppers = warp.array([warp.vec3(1.0, 1.0, 1.0), warp.vec3(3.0, 1.0, 1.0)], dtype=warp.vec3, device="cpu")
    bvh = warp.Bvh(lowers, uppers, groups=warp.array([0, 2], dtype=warp.int32, device="cpu"))
    found = warp.zeros(2, dtype=int, device="cpu")
    warp.launch(boxes, dim=1, inputs=[bvh.id, found], device="cpu")
    print("@@values", found.numpy().tolist(), flush=True)
"""
WRONG, RIGHT = "[1, 1]", "[1, 0]"


class TestSparseGroupRoot(OverlayChecks):
    patch, gate, corpus, kernel = patch, GATE, __name__, boxes
    fixed, released = FIXED, RELEASED
    script, wrong, right = SCRIPT, WRONG, RIGHT
