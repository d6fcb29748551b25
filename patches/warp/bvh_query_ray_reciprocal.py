"""``wp.bvh_query_ray`` traverses the BVH with the ray's direction where it needs its reciprocal (Warp 1.x up to 1.3.1).

What breaks.  ``bvh_query_ray`` of ``native/bvh.h`` hands the direction to
the traversal, whose slab test multiplies by what it takes to be ``1 /
dir``: a ray misses boxes it crosses and reports boxes it does not.  A ray
along x through three unit boxes in a row reports none of them, and one
along y from inside the middle box reports all three.  Nothing raises.  ``wp.bvh_query_aabb`` is right.

Fixed upstream.  NVIDIA/warp#288, fixed by NVIDIA/warp@e369666e6 on main
(``git tag --contains``: v1.4.0) and by its cherry-pick NVIDIA/warp@5a4e3b86d
on the release branch (v1.3.2 first), which passes ``1.0f / dir``.  Every
release before holds the same line (checked in v1.0.0 to v1.3.1); the matrix
runs 1.3.1 affected and 1.3.2 fixed.

How the fix works.  An overlay (``_overlay``): after ``builtin.h``, every
module gets a ``gpushim_bvh_query_ray`` that starts the release's traversal
with the reciprocal of the direction, as 1.3.2 does, and an empty adjoint,
as the release's is; the builtin ``bvh_query_ray`` is renamed to it.  The
patch first checks the released function by its declaration and the call it
holds.  The hash of every kernel or function that calls a
``bvh_query_ray`` differs while the patch is applied.

Not backported.  Nothing else changed in 1.3.2's header.

The probe.  A ray along x through three unit boxes in a row, on the CPU,
which must report all three.
"""

from __future__ import annotations

from gpushim import Patch
from gpushim.overlay import NativeFunction
from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp._overlay import builtin_overloads, calling, overlay

patch = Patch(
    id="warp.bvh_query_ray_reciprocal",
    affected="<1.3.2",
    fixed_in="1.3.2",
    issue="NVIDIA/warp#288",
    fix="NVIDIA/warp@5a4e3b86d",
    summary="wp.bvh_query_ray tests boxes with the direction instead of its reciprocal: rays miss boxes they cross.",
)

# Mixed into the hash of every adjoint that queries a ray; a change to the code below must change it.
_HASH_SALT = b"gpushim warp.bvh_query_ray_reciprocal 1"

_RELEASED = {
    "bvh.h": [
        NativeFunction(
            "CUDA_CALLABLE inline bvh_query_t bvh_query_ray(uint64_t id, const vec3& start, const vec3& dir)",
            "return bvh_query(id, true, start, dir);",
        )
    ]
}

_CODE = """namespace wp
{
// gpushim warp.bvh_query_ray_reciprocal (NVIDIA/warp#288): the traversal's slab test takes 1 / dir
CUDA_CALLABLE inline bvh_query_t gpushim_bvh_query_ray(uint64_t id, const vec3& start, const vec3& dir)
{
    return bvh_query(id, true, start, 1.0f / dir);
}

CUDA_CALLABLE inline void adj_gpushim_bvh_query_ray(uint64_t id, const vec3& start, const vec3& dir,
    uint64_t, vec3&, vec3&, bvh_query_t&)
{
}
}
"""


@patch.applier
def _apply(warp, journal):
    context = codegen_and_context(warp)[1]
    renamed = [(function, "gpushim_bvh_query_ray") for function in builtin_overloads(context, "bvh_query_ray", bool)]
    overlay(
        warp, journal, expects=_RELEASED, code=_CODE, renamed=renamed, salt=_HASH_SALT, changes=calling("bvh_query_ray")
    )


@patch.prober
def _probe():
    """A ray along x through unit boxes at x = 0, 2 and 4 reports all three; up to 1.3.1 none."""
    import warp

    warp.config.quiet = True
    warp.init()

    def hits(bvh, start, direction, found):
        query = warp.bvh_query_ray(bvh, start, direction)
        index = int(0)  # noqa: UP018  (a variable Warp lets bvh_query_next write, not a constant)
        while warp.bvh_query_next(query, index):
            found[index] = 1

    hits.__annotations__ = {
        "bvh": warp.uint64,
        "start": warp.vec3,
        "direction": warp.vec3,
        "found": warp.array(dtype=int),
    }
    hits = warp.kernel(hits)
    lowers = warp.array([warp.vec3(2.0 * i, 0.0, 0.0) for i in range(3)], dtype=warp.vec3, device="cpu")
    uppers = warp.array([warp.vec3(2.0 * i + 1.0, 1.0, 1.0) for i in range(3)], dtype=warp.vec3, device="cpu")
    bvh = warp.Bvh(lowers, uppers)
    found = warp.zeros(3, dtype=int, device="cpu")
    start, direction = warp.vec3(-1.0, 0.5, 0.5), warp.vec3(1.0, 0.0, 0.0)
    warp.launch(hits, dim=1, inputs=[bvh.id, start, direction, found], device="cpu")
    reported = [index for index, hit in enumerate(found.numpy().tolist()) if hit]
    if reported != [0, 1, 2]:
        return f"a ray along x through boxes 0, 1 and 2 reports {reported}"
    return None
