"""Warp 1.5.0 to 1.6.0 multiply float64 matrices in float precision: 2.0 where 2.000000002 is right.

What breaks.  1.5.0 made ``mul`` of two matrices in ``native/mat.h``
accumulate each entry with ``fmaf``, which takes floats: a float64 matrix
product rounds every term and sum to float, so ``[[1.000000001, 1], ...] *
[[1, 0], [1.000000001, ...]]`` gives 2.0 in float64.  The header's own uses
of ``mul`` (``adj_mul``'s gradients among them) round the same way, and
nothing raises.  1.6.1 also made ``ddot`` of two matrices accumulate with a
fused multiply-add, for float and float64.

Fixed upstream.  NVIDIA/warp#489, fixed by NVIDIA/warp@539566394 on main
(``git tag --contains``: v1.7.0) and by its cherry-pick NVIDIA/warp@3ac5e1931
on the release branch (v1.6.1 first); the ``fmaf`` came with
NVIDIA/warp@0c196e4a4 (v1.5.0 first; v1.4.2's ``mul`` adds in the matrix's
type).  The matrix runs 1.5.1 and 1.6.0 affected, 1.6.1 fixed.

How the fix works.  An overlay (``_overlay``) declares, before
``builtin.h``, an ``fmaf`` of three doubles beside the CRT's float one, so
the release's ``mul`` template, and every header function that calls it,
finds it for float64 matrices.  1.6.1 calls ``fma``, a symbol the CPU JIT
of 1.5 and 1.6 does not resolve; the overlay computes the same correctly
rounded result without it: the exact product as two doubles (Veltkamp's
split), the exact sum with the addend (two-sum), the two low parts summed
rounding to odd, and the last sum rounded to nearest (Boldo and
Melquiond's emulation of an FMA).  On CUDA it calls ``fma``.  ``ddot`` of
two matrices is renamed to ``gpushim_mat_ddot``, which accumulates as 1.6.1
does.  The patch first checks the released ``mul`` and ``ddot``.

Not backported.  The emulation is exact where no partial product
overflows or falls below 2**-969; 1.6.1's ``fma`` is exact there too.
float16 matrices: 1.6.1 multiplies and adds them in half precision, the
release (and the patched release) through ``fmaf`` in float.  Builtins
called from Python scope run ``warp.so``'s compiled ``mul``.

The probe.  The float64 product above, on the CPU: entry (0, 0) must be
2.000000002.
"""

from __future__ import annotations

from gpushim import Patch
from gpushim.overlay import NativeFunction
from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp._overlay import builtin_overloads, overlay

patch = Patch(
    id="warp.mat_mul_float64_fma",
    affected=">=1.5.0,<1.6.1",
    fixed_in="1.6.1",
    issue="NVIDIA/warp#489",
    fix="NVIDIA/warp@3ac5e1931",
    summary="float64 matrix products are accumulated in float precision (fmaf).",
)

# Mixed into the hash of every adjoint that may multiply matrices; a change to the code below must change it.
_HASH_SALT = b"gpushim warp.mat_mul_float64_fma 2"

_RELEASED = {
    "mat.h": [
        NativeFunction(
            "inline CUDA_CALLABLE mat_t<Rows,ColsOut,Type> mul(const mat_t<Rows,Cols,Type>& a,"
            " const mat_t<Cols,ColsOut,Type>& b)",
            "sum = fmaf(a.data[i][k], b.data[k][j], sum);",
        ),
        NativeFunction(
            "inline CUDA_CALLABLE Type ddot(const mat_t<Rows,Cols,Type>& a, const mat_t<Rows,Cols,Type>& b)",
            "r += a.data[i][j] * b.data[i][j];",
        ),
    ]
}

_BEFORE = """#include "crt.h"
// gpushim warp.mat_mul_float64_fma (NVIDIA/warp#489): a correctly rounded fused multiply-add of doubles,
// found by mat.h's fmaf calls for float64 matrices
#if defined(__CUDACC__)
__host__ __device__ inline double fmaf(double a, double b, double c)
{
    return fma(a, b, c);
}
#else
inline double fmaf(double a, double b, double c)
{
#pragma STDC FP_CONTRACT OFF
    const double split = 134217729.0;
    const double product = a * b;
    const double scaled_a = split * a, high_a = scaled_a - (scaled_a - a), low_a = a - high_a;
    const double scaled_b = split * b, high_b = scaled_b - (scaled_b - b), low_b = b - high_b;
    const double product_low = ((high_a * high_b - product) + high_a * low_b + low_a * high_b) + low_a * low_b;
    const double sum = c + product;
    const double sum_b = sum - c;
    const double sum_low = (c - (sum - sum_b)) + (product - sum_b);
    double low = sum_low + product_low;
    const double low_virtual = low - sum_low;
    const double low_error = (sum_low - (low - low_virtual)) + (product_low - low_virtual);
    if (low_error != 0.0)
    {
        union { double value; long long bits; } odd = {low};
        if ((odd.bits & 1) == 0)
        {
            odd.bits += ((low_error > 0.0) == (low > 0.0)) ? 1 : -1;
            low = odd.value;
        }
    }
    return sum + low;
}
#endif
"""

_AFTER = """namespace wp
{
// gpushim warp.mat_mul_float64_fma (NVIDIA/warp#489): ddot accumulates with a fused multiply-add, as 1.6.1's
template<typename Type>
inline CUDA_CALLABLE Type gpushim_multiply_add(Type a, Type b, Type c)
{
    return c + a * b;
}

inline CUDA_CALLABLE float gpushim_multiply_add(float a, float b, float c)
{
    return fmaf(a, b, c);
}

inline CUDA_CALLABLE double gpushim_multiply_add(double a, double b, double c)
{
    return fmaf(a, b, c);
}

template<unsigned Rows, unsigned Cols, typename Type>
inline CUDA_CALLABLE Type gpushim_mat_ddot(const mat_t<Rows,Cols,Type>& a, const mat_t<Rows,Cols,Type>& b)
{
    Type r(0);
    for (unsigned i = 0; i < Rows; ++i)
        for (unsigned j = 0; j < Cols; ++j)
            r = gpushim_multiply_add(a.data[i][j], b.data[i][j], r);
    return r;
}

template<unsigned Rows, unsigned Cols, typename Type>
inline CUDA_CALLABLE void adj_gpushim_mat_ddot(const mat_t<Rows,Cols,Type>& a, const mat_t<Rows,Cols,Type>& b,
    mat_t<Rows,Cols,Type>& adj_a, mat_t<Rows,Cols,Type>& adj_b, const Type adj_ret)
{
    adj_ddot(a, b, adj_a, adj_b, adj_ret);
}
}
"""


def _two_matrices(types: list[str]) -> bool:
    return types == ["mat_t", "mat_t"]


def _multiplies(tree) -> bool:
    """Whether this tree multiplies (``*``, ``*=``) or calls a ``mul`` or ``ddot``."""
    import ast

    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.Mult):
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("mul", "ddot"):
            return True
    return False


@patch.applier
def _apply(warp, journal):
    context = codegen_and_context(warp)[1]
    renamed = [(function, "gpushim_mat_ddot") for function in builtin_overloads(context, "ddot", _two_matrices)]
    overlay(
        warp,
        journal,
        expects=_RELEASED,
        before=_BEFORE,
        code=_AFTER,
        renamed=renamed,
        salt=_HASH_SALT,
        changes=_multiplies,
    )


@patch.prober
def _probe():
    """Entry (0, 0) of a float64 matrix product is 2.000000002; 1.5.0 to 1.6.0 give 2.0."""
    import warp

    warp.config.quiet = True
    warp.init()
    matrix = warp.types.matrix(shape=(2, 2), dtype=warp.float64)

    def product(a, b, out):
        out[0] = a[0] * b[0]

    product.__annotations__ = {
        "a": warp.array(dtype=matrix),
        "b": warp.array(dtype=matrix),
        "out": warp.array(dtype=matrix),
    }
    product = warp.kernel(product)
    import numpy

    a = warp.array(numpy.array([[[1.000000001, 1.0], [0.0, 1.0]]]), dtype=matrix, device="cpu")
    b = warp.array(numpy.array([[[1.0, 0.0], [1.000000001, 1.0]]]), dtype=matrix, device="cpu")
    out = warp.zeros(1, dtype=matrix, device="cpu")
    warp.launch(product, dim=1, inputs=[a, b, out], device="cpu")
    entry = float(out.numpy()[0][0][0])
    if entry != 2.000000002:
        return f"entry (0, 0) of a float64 matrix product is {entry}, not 2.000000002"
    return None
