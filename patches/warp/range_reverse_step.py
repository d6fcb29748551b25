"""The backward pass of a ``range`` loop with a step other than 1 visits the wrong indices (Warp 1.x up to 1.4.0).

What breaks.  Warp replays a dynamic ``for i in range(start, end, step)``
loop backwards through ``wp::iter_reverse`` of ``native/range.h``, which
starts at ``end - 1`` and stops at ``start - 1`` whatever the step: the
forward pass of ``range(0, 10, 4)`` visits 0, 4 and 8, its backward pass
9, 5 and 1, so the gradients of what the loop read at 0, 4 and 8 land at
9, 5 and 1, and with a negative step it reads and writes past the range.
Nothing raises.  Loops Warp unrolls (constant bounds) are right.

Fixed upstream.  NVIDIA/warp#311, fixed by NVIDIA/warp@d3fed0b87 on main
(``git tag --contains``: v1.5.0) and by its cherry-pick NVIDIA/warp@b6ccf70e5
(v1.4.1 first).  ``iter_reverse`` reads the same in v1.0.0 to v1.4.0 (checked
in their headers); the matrix runs 1.3.1 to 1.3.3 affected and 1.4.1 fixed,
and 1.4.0 was run by hand.

How the fix works.  An overlay (``_overlay``): codegen writes the call
``wp::iter_reverse`` itself, so after ``builtin.h`` the module gets a
``gpushim_iter_reverse`` and ``#define iter_reverse gpushim_iter_reverse``,
which only the generated code that follows reads.  For a range it starts at
the last value the range takes, ``start + (span / step) * step`` with
``span`` one short of ``end - start`` towards the start, and ends one step
before ``start``, as 1.4.1 does; for the other iterators (mesh, BVH and hash
grid queries) it returns the release's ``iter_reverse``.  The patch first
checks the released function by its declaration and its two statements.
The hash of every kernel or function that holds a ``for`` loop differs while
the patch is applied.

Not backported.  1.4.1 divides by the step also where it is 0, which kills
the process in the backward pass of a loop the forward pass skips; the
patch reverses such a range to one that does nothing, as the release did.

The probe.  The tape's gradient of ``sum(x[i] * (i + 1) for i in range(0,
n, 4))`` with ``n = 10``, on the CPU, which must reach ``x[8]``.
"""

from __future__ import annotations

from gpushim import Patch
from gpushim.overlay import NativeFunction
from gpushim.patches.warp._overlay import overlay

patch = Patch(
    id="warp.range_reverse_step",
    affected="<1.4.1",
    fixed_in="1.4.1",
    issue="NVIDIA/warp#311",
    fix="NVIDIA/warp@b6ccf70e5",
    summary="The backward pass of a range loop with a step other than 1 replays it at the wrong indices.",
)

# Mixed into the hash of every adjoint that loops; a change to the code below must change it.
_HASH_SALT = b"gpushim warp.range_reverse_step 1"

_RELEASED = {
    "range.h": [
        NativeFunction(
            "CUDA_CALLABLE inline range_t iter_reverse(const range_t& r)",
            "rev.start = r.end-1;",
            "rev.end = r.start-1;",
        )
    ]
}

_CODE = """namespace wp
{
// gpushim warp.range_reverse_step (NVIDIA/warp#311): reversed(range(start, end, step)) starts at the
// last value the range takes, not at end - 1
template<typename Query>
CUDA_CALLABLE inline Query gpushim_iter_reverse(const Query& query)
{
    return iter_reverse(query);
}

CUDA_CALLABLE inline range_t gpushim_iter_reverse(const range_t& r)
{
    range_t reversed;
    if (r.step != 0)
    {
        const int span = r.step > 0 ? r.end - r.start - 1 : r.end - r.start + 1;
        reversed.start = r.start + (span / r.step) * r.step;
        reversed.end = r.start - r.step;
        reversed.step = -r.step;
    }
    reversed.i = reversed.start;
    return reversed;
}
}
#define iter_reverse gpushim_iter_reverse
"""


def _loops(tree) -> bool:
    import ast

    return any(isinstance(node, ast.For) for node in ast.walk(tree))


@patch.applier
def _apply(warp, journal):
    overlay(warp, journal, expects=_RELEASED, code=_CODE, renamed=(), salt=_HASH_SALT, changes=_loops)


@patch.prober
def _probe():
    """The gradient of sum(x[i] * (i + 1) for i in range(0, 10, 4)) is 1, 5 and 9 at 0, 4 and 8."""
    import warp

    warp.config.quiet = True
    warp.init()

    def total(n, x, out):
        for i in range(0, n, 4):
            warp.atomic_add(out, 0, x[i] * float(i + 1))

    total.__annotations__ = {"n": int, "x": warp.array(dtype=float), "out": warp.array(dtype=float)}
    total = warp.kernel(total)
    x = warp.ones(10, dtype=float, device="cpu", requires_grad=True)
    out = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(total, dim=1, inputs=[10, x, out], device="cpu")
    tape.backward(loss=out)
    gradient = x.grad.numpy().tolist()
    if gradient != [1.0, 0, 0, 0, 5.0, 0, 0, 0, 9.0, 0]:
        return (
            f"the gradient of sum(x[i] * (i + 1) for i in range(0, 10, 4)) is {gradient}, not 1, 5 and 9 at 0, 4 and 8"
        )
    return None
