"""``wp.mesh_query_ray`` misses a mesh when an axis-aligned ray starts on a face of a BVH node's box (Warp < 1.15).

What breaks.  ``mesh_query_ray`` of ``native/mesh.h`` walks the mesh's BVH
with a slab test that multiplies each box's distance from the start by ``1 /
dir``.  A ray parallel to an axis has ``1 / 0 = inf`` there, and one that
starts on a box's face along that axis computes ``0 * inf``, NaN, and
misses the box.  The release widens every box by ``1e-3`` to keep the start
off the face, which rounds away at larger coordinates: a quad at 1e5 is
missed by the downward rays that start above its edges (three of five on
1.3.1, four on 1.14.0).  ``mesh_query_ray_anyhit`` and
``mesh_query_ray_count_intersections`` (from 1.11) walk the BVH the same
way.  Nothing raises.

Fixed upstream.  NVIDIA/warp#1530 (and #1529), fixed by
NVIDIA/warp@083925c31 (``git tag --contains``: v1.15.0 first), which tests a
box exactly and leaves an axis the ray runs parallel to unconstrained where
the start lies within the slab (a miss otherwise).  Every release from
v1.0.0 to v1.14.0 holds the widened test; the matrix runs 1.2.0 and 1.14.0
affected and 1.15.0 fixed.

How the fix works.  An overlay (``_overlay``): after ``builtin.h``, every
module gets ``gpushim_mesh_query_ray`` (and ``gpushim_`` twins of the other
two where the release has them), which are the release's own functions, read
from its ``mesh.h``, with the widened slab test replaced by the patch's
exact one, ``gpushim_intersect_ray_aabb``; their adjoints are the release's.
The builtins are renamed to them.  The patch first checks that the
release's functions are found and that each builtin's holds the widened
test, which it replaces.  The hash of every kernel or function that calls
one of them differs while the patch is applied.

Not backported.  1.15.0 also rewrote the traversal (the nearer child
first): the order in which boxes are visited, and so which of two faces a
ray hits at the same ``t`` (on a quad's diagonal), stays the release's.
``wp.mesh_query_point``'s sign by ray casting (``mesh_query_inside``) casts
its rays inside ``mesh.h``, which the overlay does not reach.

The probe.  A downward ray that starts above the edge of a quad at x = 1e5,
on the CPU, which must hit it.
"""

from __future__ import annotations

import re

from gpushim import Patch, TargetMismatch
from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp._overlay import builtin_overloads, calling, native_header, overlay

patch = Patch(
    id="warp.mesh_ray_parallel_slabs",
    affected="<1.15.0",
    fixed_in="1.15.0",
    issue="NVIDIA/warp#1530",
    fix="NVIDIA/warp@083925c31",
    summary="wp.mesh_query_ray misses a mesh when an axis-aligned ray starts on a face of a BVH node's box.",
)

# Mixed into the hash of every adjoint that casts a ray at a mesh; a change to the code below must change it.
_HASH_SALT = b"gpushim warp.mesh_ray_parallel_slabs 1"

_BUILTINS = ("mesh_query_ray", "mesh_query_ray_anyhit", "mesh_query_ray_count_intersections")

# The release's test of a node's box, widened by eps on every side.
_WIDENED = re.compile(
    r"intersect_ray_aabb\(\s*start\s*,\s*rcp_dir\s*,"
    r"\s*vec3\(\s*(\w+)\.x\s*-\s*eps\s*,\s*\1\.y\s*-\s*eps\s*,\s*\1\.z\s*-\s*eps\s*\)\s*,"
    r"\s*vec3\(\s*(\w+)\.x\s*\+\s*eps\s*,\s*\2\.y\s*\+\s*eps\s*,\s*\2\.z\s*\+\s*eps\s*\)\s*,\s*(\w+)\s*\)"
)
_EXACT = r"gpushim_intersect_ray_aabb(start, dir, rcp_dir, vec3(\1.x, \1.y, \1.z), vec3(\2.x, \2.y, \2.z), \3)"

_SLABS = """
// gpushim warp.mesh_ray_parallel_slabs (NVIDIA/warp#1530): a box tested exactly; an axis the ray runs
// parallel to (where (lower - pos) * (1 / 0) is 0 * inf on the box's face) holds the start, or it misses
CUDA_CALLABLE inline bool gpushim_intersect_ray_aabb(
    const vec3& pos, const vec3& dir, const vec3& rcp_dir, const vec3& lower, const vec3& upper, float& t)
{
    float enter = -FLT_MAX;
    float leave = FLT_MAX;
    for (int axis = 0; axis < 3; ++axis) {
        if (dir[axis] == 0.0f) {
            if (pos[axis] < lower[axis] || pos[axis] > upper[axis])
                return false;
            continue;
        }
        const float low = (lower[axis] - pos[axis]) * rcp_dir[axis];
        const float high = (upper[axis] - pos[axis]) * rcp_dir[axis];
        enter = max(min(low, high), enter);
        leave = min(max(low, high), leave);
    }
    if (leave < 0.0f || leave < enter)
        return false;
    t = enter;
    return true;
}
"""

# The release's adjoints take the forward pass's results: the renamed builtins' adjoints are theirs.
_ADJOINT = """
template <typename... Args> CUDA_CALLABLE inline void adj_gpushim_{name}(Args&&... args)
{{
    adj_{name}(args...);
}}
"""


def _closing(source: str, opening: int) -> int:
    """The index of the bracket that closes the one at ``opening``."""
    pair = {"(": ")", "{": "}"}[source[opening]]
    depth = 0
    for index in range(opening, len(source)):
        depth += {source[opening]: 1, pair: -1}.get(source[index], 0)
        if depth == 0:
            return index
    raise TargetMismatch(f"a bracket of warp/native/mesh.h at {opening} does not close")


def _definitions(source: str, name: str) -> list[tuple[int, str]]:
    """Each definition of ``name`` in ``source`` (declarations left out), from its return type: (offset, text)."""
    found = []
    for match in re.finditer(rf"CUDA_CALLABLE\s+inline\s+\w+\s+{name}\s*\(", source):
        body = _closing(source, match.end() - 1) + 1
        while source[body].isspace():
            body += 1
        if source[body] == "{":
            found.append((match.start(), source[match.start() : _closing(source, body) + 1]))
    return found


def corrected(source: str, names) -> str:
    """The functions ``names`` of ``source`` (``mesh.h``) renamed ``gpushim_*``, testing boxes exactly.

    TargetMismatch where a name has no definition holding the widened test.
    """
    calls = re.compile(rf"\b({'|'.join(names)})\s*\(")
    functions = []
    for name in names:
        definitions = _definitions(source, name)
        replaced = [(offset, *_WIDENED.subn(_EXACT, text)) for offset, text in definitions]
        if not any(count for _, _, count in replaced):
            raise TargetMismatch(f"no {name} of warp/native/mesh.h holds the box test widened by eps")
        functions += [(offset, calls.sub(r"gpushim_\1(", text)) for offset, text, _ in replaced]
    adjoints = [_ADJOINT.format(name=name) for name in names]
    return (
        "namespace wp\n{" + _SLABS + "".join(text + "\n" for _, text in sorted(functions)) + "".join(adjoints) + "}\n"
    )


@patch.applier
def _apply(warp, journal):
    context = codegen_and_context(warp)[1]
    names = [name for name in _BUILTINS if name in context.builtin_functions]
    code = corrected(native_header(warp, "mesh.h"), names)
    renamed = [(function, f"gpushim_{name}") for name in names for function in builtin_overloads(context, name, bool)]
    overlay(warp, journal, expects={}, code=code, renamed=renamed, salt=_HASH_SALT, changes=calling(*names))


@patch.prober
def _probe():
    """A ray along -z from above the edge x = 1e5 + 2 of a quad hits it; up to 1.14.x it misses."""
    import numpy
    import warp

    warp.config.quiet = True
    warp.init()

    def cast(mesh, start, face):
        hit = warp.mesh_query_ray(mesh, start, warp.vec3(0.0, 0.0, -1.0), 10.0)
        if hit.result:
            face[0] = hit.face

    cast.__annotations__ = {"mesh": warp.uint64, "start": warp.vec3, "face": warp.array(dtype=int)}
    cast = warp.kernel(cast)
    corners = numpy.array([[0, 0, 0], [2, 0, 0], [2, 2, 0], [0, 2, 0]], dtype=numpy.float32) + [1.0e5, 0.0, 0.0]
    points = warp.array(corners.astype(numpy.float32), dtype=warp.vec3, device="cpu")
    mesh = warp.Mesh(points, warp.array(numpy.array([0, 1, 2, 0, 2, 3], dtype=numpy.int32), dtype=int, device="cpu"))
    face = warp.full(1, -1, dtype=int, device="cpu")
    warp.launch(cast, dim=1, inputs=[mesh.id, warp.vec3(1.0e5 + 2.0, 1.0, 1.0), face], device="cpu")
    if int(face.numpy()[0]) != 0:
        return "a ray along -z from above the edge x = 1e5 + 2 of a quad misses it"
    return None
