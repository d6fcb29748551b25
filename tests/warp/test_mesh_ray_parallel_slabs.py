"""warp.mesh_ray_parallel_slabs: an axis-aligned ray that starts on a BVH box's face hits the mesh (NVIDIA/warp#1530).

A quad of two triangles over [0, 2] x [0, 2] at z = 0, placed at the origin
and at (1e5, 1e5); rays along -z from above its four edges (on the faces of
its boxes), from above each triangle, slanted, away from it, passing by and
stopping short; each gives ``mesh_query_ray``'s result, t, face, barycentrics
and sign, on the CPU.  No ray crosses the quad's diagonal, where two faces
tie and the traversal's order (1.15.0's, not backported) picks one.  At
the high end of the range, ``mesh_query_ray_anyhit`` and
``mesh_query_ray_count_intersections`` (from 1.11) are asked too.  No
``from __future__ import annotations`` here: Warp 1.2, the lowest release of
the matrix in the range, evaluates no string annotation.
"""

import numpy as np
import pytest

from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp.mesh_ray_parallel_slabs import patch
from tests.support import gate
from tests.warp.overlay_checks import OverlayChecks

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True
warp.init()  # Warp 1.2 makes no array before

DOWN = (0.0, 0.0, -1.0)
RAYS = {  # name: start and direction, relative to the quad's corner
    "above the edge x = 2": ((2.0, 0.5, 1.0), DOWN),
    "above the edge x = 0": ((0.0, 1.5, 1.0), DOWN),
    "above the edge y = 2": ((0.5, 2.0, 1.0), DOWN),
    "above the edge y = 0": ((1.5, 0.0, 1.0), DOWN),
    "above the lower triangle": ((1.5, 0.5, 1.0), DOWN),
    "above the upper triangle": ((0.5, 1.5, 1.0), DOWN),
    "slanted": ((0.0, 0.5, 2.0), (0.6, 0.0, -0.8)),
    "away from it": ((1.5, 0.5, 1.0), (0.0, 0.0, 1.0)),
    "passing by": ((3.0, 0.5, 1.0), DOWN),
    "stopping short": ((1.5, 0.5, 5.0), DOWN),
}
OFFSETS = {"at the origin": 0.0, "at 1e5": 1.0e5}


@warp.kernel
def cast(
    mesh: warp.uint64,
    starts: warp.array(dtype=warp.vec3),
    directions: warp.array(dtype=warp.vec3),
    found: warp.array2d(dtype=float),
):
    ray = warp.tid()
    hit = warp.mesh_query_ray(mesh, starts[ray], directions[ray], 4.0)
    if hit.result:
        found[ray, 0] = hit.t
        found[ray, 1] = float(hit.face)
        found[ray, 2] = hit.u
        found[ray, 3] = hit.v
        found[ray, 4] = hit.sign


def quad_at(offset: float):
    """The quad's mesh at (offset, offset, 0), and the starts of :data:`RAYS` there, on the CPU."""
    shift = np.array([offset, offset, 0.0], dtype=np.float32)
    quad = np.array([[0, 0, 0], [2, 0, 0], [2, 2, 0], [0, 2, 0]], dtype=np.float32) + shift
    triangles = warp.array(np.array([0, 1, 2, 0, 2, 3], dtype=np.int32), dtype=int, device="cpu")
    starts = np.array([start for start, _ in RAYS.values()], dtype=np.float32) + shift
    mesh = warp.Mesh(warp.array(quad, dtype=warp.vec3, device="cpu"), triangles)
    return mesh, warp.array(starts, dtype=warp.vec3, device="cpu")


def run_corpus() -> dict:
    """What each ray reports: [t, face, u, v, sign], or None for a miss."""
    outcomes = {}
    directions = np.array([direction for _, direction in RAYS.values()], dtype=np.float32)
    directions = warp.array(directions, dtype=warp.vec3, device="cpu")
    for place, offset in OFFSETS.items():
        mesh, starts = quad_at(offset)
        found = warp.full((len(RAYS), 5), -9.0, dtype=float, device="cpu")
        warp.launch(cast, dim=len(RAYS), inputs=[mesh.id, starts, directions, found], device="cpu")
        for ray, row in zip(RAYS, found.numpy().tolist()):
            outcomes[f"{ray}, {place}"] = None if row[0] == -9.0 else row
    return outcomes


HITS = {  # the same at the origin and at 1e5
    "above the edge x = 2": [1.0, 0.0, 0.0, 0.75, 4.0],
    "above the edge x = 0": [1.0, 1.0, 0.25, -0.0, 4.0],
    "above the edge y = 2": [1.0, 1.0, 0.0, 0.25, 4.0],
    "above the edge y = 0": [1.0, 0.0, 0.25, 0.75, 4.0],
    "above the lower triangle": [1.0, 0.0, 0.25, 0.5, 4.0],
    "above the upper triangle": [1.0, 1.0, 0.25, 0.25, 4.0],
    "slanted": [2.5, 0.0, 0.25, 0.5, 4.0],
}
FIXED = {f"{ray}, {place}": HITS.get(ray) for place in OFFSETS for ray in RAYS}
# Where the releases up to 1.14.x differ: rays that start on a box's face at 1e5 miss, which ones depending on the
# release's BVH: 1.2.0 (and 1.3.1) hit the quad from above y = 2, 1.14.0 misses it there too.
RELEASED = {f"above the edge {edge}, at 1e5": None for edge in ("x = 2", "x = 0", "y = 0")}
if GATE.release[1] == "1.14.0":
    RELEASED["above the edge y = 2, at 1e5"] = None


SCRIPT = """
import sys
import numpy as np
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache
warp.init()


@warp.kernel
def cast(mesh: warp.uint64, face: warp.array(dtype=int)):
    hit = warp.mesh_query_ray(mesh, warp.vec3(1.0e5 + 2.0, 1.0, 1.0), warp.vec3(0.0, 0.0, -1.0), 10.0)
    if hit.result:
        face[0] = hit.face


KERNEL = cast


def run():
    quad = np.array([[0, 0, 0], [2, 0, 0], [2, 2, 0], [0, 2, 0]], dtype=np.float32) + np.float32([1.0e5, 0.0, 0.0])
    triangles = warp.array(np.array([0, 1, 2, 0, 2, 3], dtype=np.int32), dtype=int, device="cpu")
    mesh = warp.Mesh(warp.array(quad, dtype=warp.vec3, device="cpu"), triangles)
    face = warp.full(1, -1, dtype=int, device="cpu")
    warp.launch(cast, dim=1, inputs=[mesh.id, face], device="cpu")
    print("@@values", face.numpy().tolist(), flush=True)
"""
WRONG, RIGHT = "[-1]", "[0]"


class TestMeshRayParallelSlabs(OverlayChecks):
    patch, gate, corpus, kernel = patch, GATE, __name__, cast
    fixed, released = FIXED, RELEASED
    script, wrong, right = SCRIPT, WRONG, RIGHT


@GATE.ends_only
def test_effective_for_anyhit_and_count_intersections_where_the_release_has_them(gpushim_patched):
    """From 1.11 they walk the BVH as ``mesh_query_ray`` does: each sees the quad at 1e5 from above its edges."""
    if "mesh_query_ray_anyhit" not in codegen_and_context(warp)[1].builtin_functions:
        pytest.skip(f"warp-lang {warp.config.version} has neither")

    def kin(mesh: warp.uint64, starts: warp.array(dtype=warp.vec3), seen: warp.array2d(dtype=int)):
        ray = warp.tid()
        if warp.mesh_query_ray_anyhit(mesh, starts[ray], warp.vec3(0.0, 0.0, -1.0), 4.0):
            seen[ray, 0] = 1
        seen[ray, 1] = warp.mesh_query_ray_count_intersections(mesh, starts[ray], warp.vec3(0.0, 0.0, -1.0))

    kin = warp.kernel(kin)
    mesh, starts = quad_at(1.0e5)
    seen = warp.zeros((len(RAYS), 2), dtype=int, device="cpu")
    warp.launch(kin, dim=4, inputs=[mesh.id, starts, seen], device="cpu")
    assert seen.numpy().tolist()[:4] == [[1, 1]] * 4  # the four rays above the edges
