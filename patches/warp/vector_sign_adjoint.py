"""The gradient of ``wp.sign`` of a vector is that of ``abs`` (Warp 1.3.0 up to 1.13.x).

What breaks.  ``wp.sign(v)`` of a vector is constant almost everywhere, so
its gradient is 0; but its adjoint in ``native/vec.h`` adds ``adj_ret`` for
each element that is not negative and subtracts it for each that is, the
gradient of ``abs(v)``.  The tape's gradient of ``sum(wp.sign(v))`` at
``v = (1, -2, 3)`` is ``(1, -1, 1)`` where it is ``(0, 0, 0)``, and it adds
to whatever else the loss reads of ``v``.  Nothing raises.  (``wp.sign`` of
a scalar is right.)

Fixed upstream.  NVIDIA/warp#1466, fixed by NVIDIA/warp@849e9ec0b (``git tag
--contains``: v1.14.0 first), which marks the vector overload
non-differentiable, so that the generated backward pass does not call it, and
leaves its adjoint empty.  The vector overload came in 1.3.0 with the wrong
adjoint, which v1.3.0 to v1.13.0 all hold (checked in their headers); the
matrix runs 1.3.1 and 1.13.0 affected, 1.14.0 fixed.

How the fix works.  An overlay (``_overlay``): after ``builtin.h``, every
module gets a ``gpushim_sign`` of a vector that returns the release's
``sign`` and an ``adj_gpushim_sign`` that adds nothing, and the vector
overloads of the builtin ``sign`` are renamed to them: the generated backward
pass calls an adjoint that leaves the gradient as 1.14.0 leaves it.  The
patch first checks the released adjoint by its declaration and the
subtraction it holds.  The hash of every kernel or function that calls a
``sign`` differs while the patch is applied.  Releases from 1.11 precompile
``builtin.h``, which the overlay leaves as released (see docs/overlays.md).

Not backported.  1.14.0 also marks other builtins non-differentiable whose
adjoints were already empty (``volume_sample_i``, the integer constructors,
``range``, ...): nothing changes for them but a call to an empty function.
Where 1.14.0 refuses ``wp.grad`` of a non-differentiable function, the
releases before it have no ``wp.grad``.

The probe.  The tape's gradient of ``sum(wp.sign(v))`` at ``v = (1, -2, 3)``
on the CPU, which must be ``(0, 0, 0)``.
"""

from __future__ import annotations

from gpushim import Patch
from gpushim.overlay import NativeFunction
from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp._overlay import builtin_overloads, calling, overlay

patch = Patch(
    id="warp.vector_sign_adjoint",
    affected=">=1.3.0,<1.14.0",
    fixed_in="1.14.0",
    issue="NVIDIA/warp#1466",
    fix="NVIDIA/warp@849e9ec0b",
    summary="The gradient of wp.sign of a vector is the gradient of abs, (1, -1, 1) instead of 0.",
)

# Mixed into the hash of every adjoint that calls a sign; a change to the code below must change it.
_HASH_SALT = b"gpushim warp.vector_sign_adjoint 1"

_RELEASED = {
    "vec.h": [
        NativeFunction(
            "inline CUDA_CALLABLE void adj_sign(const vec_t<Length, Type>& v, vec_t<Length, Type>& adj_v,"
            " const vec_t<Length, Type>& adj_ret)",
            "adj_v[i] -= adj_ret[i];",
        )
    ]
}

_CODE = """namespace wp
{
// gpushim warp.vector_sign_adjoint (NVIDIA/warp#1466): sign is constant almost everywhere, its gradient 0
template<unsigned Length, typename Type>
inline CUDA_CALLABLE vec_t<Length, Type> gpushim_sign(const vec_t<Length, Type>& v)
{
    return sign(v);
}

template<unsigned Length, typename Type>
inline CUDA_CALLABLE void adj_gpushim_sign(const vec_t<Length, Type>& v, vec_t<Length, Type>& adj_v,
    const vec_t<Length, Type>& adj_ret)
{
}
}
"""


def _of_a_vector(types: list[str]) -> bool:
    return types == ["vec_t"]


@patch.applier
def _apply(warp, journal):
    context = codegen_and_context(warp)[1]
    renamed = [(function, "gpushim_sign") for function in builtin_overloads(context, "sign", _of_a_vector)]
    overlay(warp, journal, expects=_RELEASED, code=_CODE, renamed=renamed, salt=_HASH_SALT, changes=calling("sign"))


@patch.prober
def _probe():
    """The tape's gradient of sum(wp.sign(v)) at v = (1, -2, 3) is (0, 0, 0); 1.3.0 to 1.13.x give (1, -1, 1)."""
    import numpy
    import warp

    warp.config.quiet = True
    warp.init()

    def total(v, out):
        s = warp.sign(v[0])
        out[0] = s[0] + s[1] + s[2]

    total.__annotations__ = {"v": warp.array(dtype=warp.vec3), "out": warp.array(dtype=float)}
    total = warp.kernel(total)
    # From a float32 NumPy array, which even Warp 1.2 under NumPy 2 converts without a copy.
    values = numpy.array([[1.0, -2.0, 3.0]], numpy.float32)
    v = warp.array(values, dtype=warp.vec3, device="cpu", requires_grad=True)
    out = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    try:
        with tape:
            warp.launch(total, dim=1, inputs=[v, out], device="cpu")
    except Exception as error:
        if "while parsing function" in str(error):
            return None  # before 1.3.0 wp.sign takes no vector: no such adjoint
        raise
    tape.backward(loss=out)
    gradient = v.grad.numpy()[0].tolist()
    if gradient != [0.0, 0.0, 0.0]:
        return f"the gradient of sum(wp.sign(v)) at v = (1, -2, 3) is {gradient}, not (0, 0, 0)"
    return None
