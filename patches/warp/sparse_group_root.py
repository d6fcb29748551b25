"""``wp.bvh_get_group_root`` and ``wp.mesh_get_group_root`` reach into later groups where ids skip one (Warp 1.11-1.15).

What breaks.  ``bvh_get_group_root`` of ``native/bvh.h`` finds a group's
last leaf as the one before the first leaf of group ``id + 1``; where no
leaf has that id (groups 0 and 2, say), it takes the BVH's last leaf, and
the root it returns spans every group after the asked one.  A query from
group 0's root reports group 2's boxes too.  ``mesh_get_group_root``
calls it for a mesh's triangles.  Nothing raises.

Fixed upstream.  NVIDIA/warp#1612, fixed by NVIDIA/warp@43429523b
(``git tag --contains``: v1.16.0 first), which ends the group before the
first leaf of any greater id.  Group roots came with v1.11.0; every release
from it to v1.15.0 holds the same lookup; the matrix runs 1.11.0 and 1.15.0
affected and 1.16.0 fixed.

How the fix works.  An overlay (``_overlay``): after ``builtin.h``, every
module gets a ``gpushim_bvh_get_group_root`` that ends the group before the
first leaf whose group id is greater (a binary search over the leaves, which
the BVH keeps sorted by group), and a ``gpushim_mesh_get_group_root`` that
asks the release's ``mesh_get_group_root`` first (which answers -1 for a
missing group, and for a mesh the CuBQL backend built, from 1.13) and then
the corrected lookup for the mesh's BVH.  The two builtins are renamed to
them; their adjoints are empty, as the release's are.  The patch first
checks the released function by its declaration and the ``id + 1`` it
holds.  The hash of every kernel or function that calls either builtin
differs while the patch is applied.

Not backported.  Group id ``INT32_MAX``, whose ``id + 1`` overflows in the
release, is answered right too, as 1.16.0 does; nothing else changed.

The probe.  Two boxes, one in group 0 and one in group 2, on the CPU: a
query for every box from group 0's root must report group 0's box alone.
"""

from __future__ import annotations

from gpushim import Patch
from gpushim.overlay import NativeFunction
from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp._overlay import builtin_overloads, calling, overlay

patch = Patch(
    id="warp.sparse_group_root",
    affected=">=1.11.0,<1.16.0",
    fixed_in="1.16.0",
    issue="NVIDIA/warp#1612",
    fix="NVIDIA/warp@43429523b",
    summary="wp.bvh_get_group_root and wp.mesh_get_group_root return roots that reach later groups where ids skip one.",
)

# Mixed into the hash of every adjoint that asks for a group root; a change to the code below must change it.
_HASH_SALT = b"gpushim warp.sparse_group_root 1"

_RELEASED = {
    "bvh.h": [
        NativeFunction(
            "CUDA_CALLABLE inline int bvh_get_group_root(uint64_t id, int group_id)",
            "const int next_group = static_cast<int>(group_id) + 1;",
        )
    ],
    "mesh.h": [NativeFunction("CUDA_CALLABLE inline int mesh_get_group_root(uint64_t id, int group_id)")],
}

_CODE = """namespace wp
{
// gpushim warp.sparse_group_root (NVIDIA/warp#1612): a group ends before the first leaf of a greater group id
CUDA_CALLABLE inline int gpushim_bvh_get_group_root(uint64_t id, int group_id)
{
    BVH bvh = bvh_get(id);
    const int first = lower_bound_group(bvh, group_id);
    if (first < 0)
        return -1;
    int end = first;
    int past = bvh.num_leaf_nodes;
    while (end < past) {
        const int middle = end + (past - end) / 2;
        if (get_leaf_group(bvh, middle) > group_id)
            past = middle;
        else
            end = middle + 1;
    }
    return lca(first, end - 1, bvh.node_parents);
}

CUDA_CALLABLE inline int gpushim_mesh_get_group_root(uint64_t id, int group_id)
{
    if (mesh_get_group_root(id, group_id) < 0)
        return -1;
    return gpushim_bvh_get_group_root((uint64_t)&((Mesh*)(id))->bvh, group_id);
}

CUDA_CALLABLE inline void adj_gpushim_bvh_get_group_root(uint64_t, int, uint64_t&, int&, int&) { }

CUDA_CALLABLE inline void adj_gpushim_mesh_get_group_root(uint64_t, int, uint64_t&, int&, int&) { }
}
"""

_BUILTINS = ("bvh_get_group_root", "mesh_get_group_root")


@patch.applier
def _apply(warp, journal):
    context = codegen_and_context(warp)[1]
    renamed = [
        (function, f"gpushim_{name}") for name in _BUILTINS for function in builtin_overloads(context, name, bool)
    ]
    overlay(warp, journal, expects=_RELEASED, code=_CODE, renamed=renamed, salt=_HASH_SALT, changes=calling(*_BUILTINS))


@patch.prober
def _probe():
    """A box in group 0 and one in group 2: a query from group 0's root reports box 0 alone; up to 1.15.x both."""
    import warp

    if "bvh_get_group_root" not in codegen_and_context(warp)[1].builtin_functions:
        return None  # before 1.11.0 a BVH has no groups, and so no such bug
    warp.config.quiet = True
    warp.init()

    def boxes(bvh, found):
        query = warp.bvh_query_aabb(bvh, warp.vec3(-10.0), warp.vec3(10.0), warp.bvh_get_group_root(bvh, 0))
        index = int(0)  # noqa: UP018  (a variable Warp lets bvh_query_next write, not a constant)
        while warp.bvh_query_next(query, index):
            found[index] = 1

    boxes.__annotations__ = {"bvh": warp.uint64, "found": warp.array(dtype=int)}
    boxes = warp.kernel(boxes)
    lowers = warp.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]], dtype=warp.vec3, device="cpu")
    uppers = warp.array([[1.0, 1.0, 1.0], [3.0, 1.0, 1.0]], dtype=warp.vec3, device="cpu")
    groups = warp.array([0, 2], dtype=warp.int32, device="cpu")
    bvh = warp.Bvh(lowers, uppers, groups=groups)
    found = warp.zeros(2, dtype=int, device="cpu")
    warp.launch(boxes, dim=1, inputs=[bvh.id, found], device="cpu")
    reported = [index for index, hit in enumerate(found.numpy().tolist()) if hit]
    if reported != [0]:
        return f"a query from group 0's root, of a box in group 0 and one in group 2, reports boxes {reported}"
    return None
