"""Warp 1.7.2 to 1.9.x compute a minimum in ``atomic_add`` on int64: 1024 adds of 1 to 0 give 0.

What breaks.  1.7.2 gave ``builtin.h`` a specialization of ``atomic_add``
for int64, meant to emulate an atomic add with compare-and-swap.  It stores
the smaller of the old value and the operand instead: on the CPU ``*address
= min(old, val)``, on CUDA a compare-and-swap loop while ``val < old``.
Every int64 ``wp.atomic_add`` and ``wp.atomic_sub`` (an add of the negated
value), on arrays of any dimension and on vectors of int64, goes through
it: 1024 threads adding 1 to 0 leave 0, subtracting 2 leaves -2, and the
old values returned are all 0.  Nothing raises.  (``a[i] += x`` on int64
arrays is generated as ``a[i] = a[i] + x`` in these releases, and is right.)

Fixed upstream.  NVIDIA/warp#977, fixed by NVIDIA/warp@e8b0f6bd7 (``git
tag --contains``: v1.10.0 first), which makes the specialization add (a
plain add on the CPU, ``atomicAdd`` on unsigned 64-bit integers on CUDA).
The specialization came with NVIDIA/warp@4c9bb7990 in 1.7.2 (on main
a3a2392c6, in 1.8.0).

How the fix works.  An overlay (``_overlay``) on both module headers, the
CPU build's and the CUDA build's: a non-template ``wp::atomic_add(int64*,
int64)`` is declared before ``#include "builtin.h"`` and defined, adding,
after it.  C++ prefers a non-template function to a template
specialization, and the templates of ``array.h``, ``vec.h`` and the rest
find it, declared before them: every int64 add of the module reaches it.
(No release in the range precompiles ``builtin.h``, which a declaration
before it would miss.)  The patch first checks the released specialization
by its declaration and the minimum it stores.  The hash of every kernel or
function whose source calls an ``atomic_add`` or ``atomic_sub``, or holds
``+=`` or ``-=`` on a subscript, differs while the patch is applied.

Not backported.  1.10.0's tests.  ``unpatch()`` leaves a module already
loaded while patched as it is until Warp hashes it again.

The probe.  1024 CPU threads each ``wp.atomic_add(a, 0, 1)`` on an int64
array holding 0, which must end holding 1024.
"""

from __future__ import annotations

from gpushim import Patch
from gpushim.overlay import NativeFunction
from gpushim.patches.warp._overlay import overlay

patch = Patch(
    id="warp.int64_atomic_add",
    affected=">=1.7.2,<1.10.0",
    fixed_in="1.10.0",
    issue="NVIDIA/warp#977",
    fix="NVIDIA/warp@e8b0f6bd7",
    summary="wp.atomic_add and wp.atomic_sub on int64 store the minimum instead of the sum.",
)

# Mixed into the hash of every adjoint that may add int64 atomically;
# a change to the code below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.int64_atomic_add 1"

_RELEASED = {
    "builtin.h": [
        NativeFunction("inline CUDA_CALLABLE int64 atomic_add(int64* address, int64 val)", "*address = min(old, val);")
    ]
}
_BEFORE = """#include "crt.h"
#if defined(__CUDACC__)
#define GPUSHIM_CALLABLE __host__ __device__
#else
#define GPUSHIM_CALLABLE
#endif
namespace wp
{
// gpushim warp.int64_atomic_add (NVIDIA/warp#977): preferred to builtin.h's int64 specialization, which stores a min
inline GPUSHIM_CALLABLE int64_t atomic_add(int64_t* buf, int64_t value);
}
"""
_AFTER = """namespace wp
{
inline GPUSHIM_CALLABLE int64_t atomic_add(int64_t* buf, int64_t value)
{
#if defined(__CUDA_ARCH__)
    return (int64_t)atomicAdd((unsigned long long*)buf, (unsigned long long)value);
#else
    int64_t old = buf[0];
    buf[0] = old + value;
    return old;
#endif
}
}
#undef GPUSHIM_CALLABLE
"""


def _adds_atomically(tree) -> bool:
    """Whether this tree calls an ``atomic_add`` or ``atomic_sub``, or holds ``+=`` or ``-=`` on a subscript."""
    import ast

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name.endswith(("atomic_add", "atomic_sub")):
                return True
        if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            if isinstance(node.target, ast.Subscript):
                return True
    return False


@patch.applier
def _apply(warp, journal):
    overlay(
        warp,
        journal,
        expects=_RELEASED,
        before=_BEFORE,
        code=_AFTER,
        renamed=(),
        salt=_HASH_SALT,
        changes=_adds_atomically,
    )


@patch.prober
def _probe():
    """1024 CPU threads adding 1 to an int64 holding 0 leave 1024; 1.7.2 to 1.9.x leave 0.

    The kernel is defined anew at each call, which makes Warp hash its module
    again, so the answer follows the patch's current state.
    """
    import warp

    warp.config.quiet = True
    warp.init()

    def count(a):
        warp.atomic_add(a, 0, warp.int64(1))

    count.__annotations__ = {"a": warp.array(dtype=warp.int64)}
    count = warp.kernel(count)

    total = warp.zeros(1, dtype=warp.int64, device="cpu")
    warp.launch(count, dim=1024, inputs=[total], device="cpu")
    result = int(total.numpy()[0])
    if result != 1024:
        return f"1024 threads each atomic_add 1 to an int64 holding 0 leave {result}, not 1024"
    return None
