"""The gradient of a scalar divided by a vector, matrix or quaternion is wrong (Warp 1.x up to 1.8.0).

What breaks.  ``y = s / v`` with a scalar ``s`` and a vector, matrix or
quaternion ``v`` divides element by element, but its adjoint in
``native/vec.h``, ``mat.h`` and ``quat.h`` is that of ``v / s``, garbled:
``adj_s -= dot(v, adj_y) / s**2`` and ``adj_v += s / adj_y``.  For
``sum(2 / (1, 2, 4))`` the tape gives ``ds = -1.75`` where it is ``1.75``
and ``dv = (2, 2, 2)`` where it is ``(-2, -0.5, -0.125)``: inverse masses
and ``1 / r`` terms train on wrong gradients, and nothing raises.  The
forward value is right.

Fixed upstream.  NVIDIA/warp#831, fixed by NVIDIA/warp@6ef943670 on main
(``git tag --contains``: v1.9.0) and by its cherry-pick NVIDIA/warp@605b71c43
on the release branch (v1.8.1 alone).  Every release before has the wrong
adjoints (checked in the headers of v1.0.0 to v1.8.0); the matrix runs
1.3.1 and 1.8.0 affected, 1.8.1 fixed.

How the fix works.  An overlay (``_overlay``): three corrected adjoints,
``adj_gpushim_scalar_div``, with ``d y_i / d s = 1 / v_i`` and ``d y_i / d
v_i = -s / v_i**2`` computed as 1.8.1 computes them, are compiled into every
module after ``builtin.h``, beside a ``gpushim_scalar_div`` that returns the
release's ``div``; the builtin overloads of ``div`` of a scalar by a
vector, matrix or quaternion are renamed to them, so the generated code of
``s / v`` and ``wp.div(s, v)`` calls them, and every other division stays
the release's.  The patch first checks the three released adjoints, by
declaration and by the two wrong statements each holds.  The hash of every
kernel or function that divides differs while the patch is applied.

Not backported.  1.9.0's unrelated change to ``adj_svd2`` in the same
commit, which only splits an expression.  The released vector adjoint's
``FP_CHECK`` assertion, compiled only in Warp's own debug builds.  Warp
1.0 to 1.2 have the bug too, but declare their builtins' generic argument
types as TypeVars, which the overlay's renaming cannot read yet: there
status says ``not-backported``.

The probe.  The tape's gradient of ``sum(s / v)`` on the CPU at ``s = 2``,
``v = (1, 2, 4)``, which must be ``1.75`` for ``s``.
"""

from __future__ import annotations

from gpushim import Patch
from gpushim.overlay import NativeFunction
from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp._overlay import builtin_overloads, overlay

patch = Patch(
    id="warp.scalar_div_adjoint",
    affected=">=1.3.0,<1.8.1",
    fixed_in="1.8.1",
    not_backported={">=1.0.0,<1.3.0": "the overlay cannot yet rename Warp 1.2's builtin overloads (TypeVar types)"},
    issue="NVIDIA/warp#831",
    fix="NVIDIA/warp@605b71c43",
    summary="The gradient of a scalar divided by a vector, matrix or quaternion has the wrong sign and values.",
)

# Mixed into the hash of every adjoint that divides; a change to the code below must change it.
_HASH_SALT = b"gpushim warp.scalar_div_adjoint 1"

_NAME = "gpushim_scalar_div"

_RELEASED = {
    "vec.h": [
        NativeFunction(
            "inline CUDA_CALLABLE void adj_div(Type s, vec_t<Length, Type> a, Type& adj_s,"
            " vec_t<Length, Type>& adj_a, const vec_t<Length, Type>& adj_ret)",
            "adj_s -= dot(a , adj_ret)/ (s * s);",
            "adj_a[i] += s / adj_ret[i];",
        )
    ],
    "mat.h": [
        NativeFunction(
            "inline CUDA_CALLABLE void adj_div(Type s, const mat_t<Rows,Cols,Type>& a, Type& adj_s,"
            " mat_t<Rows,Cols,Type>& adj_a, const mat_t<Rows,Cols,Type>& adj_ret)",
            "adj_s -= tensordot(a , adj_ret)/ (s * s);",
            "adj_a.data[i][j] += s / adj_ret.data[i][j];",
        )
    ],
    "quat.h": [
        NativeFunction(
            "inline CUDA_CALLABLE void adj_div(Type s, quat_t<Type> a, Type& adj_s,"
            " quat_t<Type>& adj_a, const quat_t<Type>& adj_ret)",
            "adj_s -= dot(a, adj_ret)/ (s * s);",
            "adj_a += s / adj_ret;",
        )
    ],
}

_CODE = """namespace wp
{
// gpushim warp.scalar_div_adjoint (NVIDIA/warp#831): y = s / a element by element,
// so dy/ds = 1 / a and dy/da = -s / a^2, element by element
template<unsigned Length, typename Type>
inline CUDA_CALLABLE vec_t<Length, Type> gpushim_scalar_div(Type s, vec_t<Length, Type> a)
{
    return div(s, a);
}

template<unsigned Length, typename Type>
inline CUDA_CALLABLE void adj_gpushim_scalar_div(Type s, vec_t<Length, Type> a, Type& adj_s,
    vec_t<Length, Type>& adj_a, const vec_t<Length, Type>& adj_ret)
{
    for (unsigned i = 0; i < Length; ++i)
    {
        const Type reciprocal = Type(1) / a[i];
        adj_a[i] -= s * adj_ret[i] * reciprocal * reciprocal;
        adj_s += adj_ret[i] * reciprocal;
    }
}

template<unsigned Rows, unsigned Cols, typename Type>
inline CUDA_CALLABLE mat_t<Rows, Cols, Type> gpushim_scalar_div(Type s, const mat_t<Rows, Cols, Type>& a)
{
    return div(s, a);
}

template<unsigned Rows, unsigned Cols, typename Type>
inline CUDA_CALLABLE void adj_gpushim_scalar_div(Type s, const mat_t<Rows, Cols, Type>& a, Type& adj_s,
    mat_t<Rows, Cols, Type>& adj_a, const mat_t<Rows, Cols, Type>& adj_ret)
{
    for (unsigned i = 0; i < Rows; ++i)
    {
        for (unsigned j = 0; j < Cols; ++j)
        {
            const Type reciprocal = Type(1) / a.data[i][j];
            adj_a.data[i][j] -= s * adj_ret.data[i][j] * reciprocal * reciprocal;
            adj_s += adj_ret.data[i][j] * reciprocal;
        }
    }
}

template<typename Type>
inline CUDA_CALLABLE quat_t<Type> gpushim_scalar_div(Type s, quat_t<Type> a)
{
    return div(s, a);
}

template<typename Type>
inline CUDA_CALLABLE void adj_gpushim_scalar_div(Type s, quat_t<Type> a, Type& adj_s,
    quat_t<Type>& adj_a, const quat_t<Type>& adj_ret)
{
    for (int i = 0; i < 4; ++i)
    {
        const Type reciprocal = Type(1) / a[i];
        adj_a[i] -= s * adj_ret[i] * reciprocal * reciprocal;
        adj_s += adj_ret[i] * reciprocal;
    }
}
}
"""


def _scalar_by_composite(types: list[str]) -> bool:
    return len(types) == 2 and types[1] in ("vec_t", "mat_t", "quat_t") and types[0] not in ("vec_t", "mat_t", "quat_t")


def _divides(tree) -> bool:
    """Whether this tree holds a division (``/``, ``/=``) or calls a ``div``."""
    import ast

    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.Div):
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "div":
            return True
    return False


@patch.applier
def _apply(warp, journal):
    context = codegen_and_context(warp)[1]
    renamed = [(function, _NAME) for function in builtin_overloads(context, "div", _scalar_by_composite)]
    overlay(warp, journal, expects=_RELEASED, code=_CODE, renamed=renamed, salt=_HASH_SALT, changes=_divides)


@patch.prober
def _probe():
    """The tape's gradient of sum(2 / (1, 2, 4)) is 1.75 for the 2; up to 1.8.0 it is -1.75."""
    import warp

    warp.config.quiet = True
    warp.init()

    def total(s, v, out):
        y = s[0] / v[0]
        out[0] = y[0] + y[1] + y[2]

    total.__annotations__ = {
        "s": warp.array(dtype=float),
        "v": warp.array(dtype=warp.vec3),
        "out": warp.array(dtype=float),
    }
    total = warp.kernel(total)
    s = warp.array([2.0], dtype=float, device="cpu", requires_grad=True)
    v = warp.array([warp.vec3(1.0, 2.0, 4.0)], dtype=warp.vec3, device="cpu", requires_grad=True)
    out = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(total, dim=1, inputs=[s, v, out], device="cpu")
    tape.backward(loss=out)
    gradient = float(s.grad.numpy()[0])
    if gradient != 1.75:
        return f"the gradient of sum(s / v) for s = 2, v = (1, 2, 4) is {gradient} for s, not 1.75"
    return None
