"""warp.scalar_div_adjoint: the gradient of ``s / v`` for a vector, matrix or quaternion ``v`` (NVIDIA/warp#831).

One kernel divides a scalar by each kind of ``v`` on the CPU, and the tape
takes the gradient of each sum; controls divide the other way round and a
scalar by a scalar.  The proofs that start interpreters run on the lowest
and highest affected release of the matrix only; the faithful corpus on
every one.
"""

from __future__ import annotations

from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp.scalar_div_adjoint import patch
from tests.support import gate
from tests.warp.overlay_checks import OverlayChecks

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True

Vec2d = warp.types.vector(length=2, dtype=warp.float64)


@warp.func
def divide_in_a_function(s: float, v: warp.vec3):
    return warp.div(s, v)


@warp.kernel
def divisions(
    s: warp.array(dtype=float),
    v: warp.array(dtype=warp.vec3),
    s64: warp.array(dtype=warp.float64),
    v64: warp.array(dtype=Vec2d),
    m: warp.array(dtype=warp.mat22),
    q: warp.array(dtype=warp.quat),
    out: warp.array(dtype=float),
    out64: warp.array(dtype=warp.float64),
):
    y = s[0] / v[0]
    out[0] = y[0] + y[1] + y[2]
    y64 = s64[0] / v64[0]
    out64[0] = y64[0] + y64[1]
    ym = s[1] / m[0]
    out[1] = ym[0, 0] + ym[0, 1] + ym[1, 0] + ym[1, 1]
    yq = s[2] / q[0]
    out[2] = yq[0] + yq[1] + yq[2] + yq[3]
    yf = divide_in_a_function(s[3], v[1])
    out[3] = yf[0] + yf[1] + yf[2]
    yv = v[2] / s[4]  # controls: the other way round, and scalar by scalar
    out[4] = yv[0] + yv[1] + yv[2]
    out[5] = s[5] / s[6]


def run_corpus() -> dict:
    """Each sum's value and the tape's gradients of it, for ``s`` and for ``v``."""

    def array(values, dtype):
        return warp.array(values, dtype=dtype, device="cpu", requires_grad=True)

    s = array([2.0, 3.0, 2.0, 2.0, 4.0, 3.0, 4.0], float)
    v = array([warp.vec3(1.0, 2.0, 4.0), warp.vec3(1.0, 2.0, 4.0), warp.vec3(1.0, 2.0, 4.0)], warp.vec3)
    s64 = array([0.5], warp.float64)
    v64 = array([Vec2d(0.25, 2.0)], Vec2d)
    m = array([warp.mat22(1.0, 2.0, 4.0, 8.0)], warp.mat22)
    q = array([warp.quat(1.0, 2.0, 4.0, 8.0)], warp.quat)
    out, out64 = array([0.0] * 6, float), array([0.0], warp.float64)
    tape = warp.Tape()
    with tape:
        warp.launch(divisions, dim=1, inputs=[s, v, s64, v64, m, q, out, out64], device="cpu")
    tape.backward(
        grads={out: warp.ones(6, dtype=float, device="cpu"), out64: warp.ones(1, dtype=warp.float64, device="cpu")}
    )

    def listed(values):
        return [float(value) for value in values.flatten()]

    ds, dv = listed(s.grad.numpy()), v.grad.numpy()
    return {
        "sums": listed(out.numpy()) + listed(out64.numpy()),
        "s / vec3: ds, dv": [ds[0], listed(dv[0])],
        "s / vec2d: ds, dv": [listed(s64.grad.numpy())[0], listed(v64.grad.numpy())],
        "s / mat22: ds, dm": [ds[1], listed(m.grad.numpy())],
        "s / quat: ds, dq": [ds[2], listed(q.grad.numpy())],
        "wp.div(s, vec3) in a wp.func: ds, dv": [ds[3], listed(dv[1])],
        "vec3 / s: ds, dv": [ds[4], listed(dv[2])],
        "s / s: ds": ds[5:],
    }


FIXED = {
    "sums": [3.5, 5.625, 3.75, 3.5, 1.75, 0.75, 2.25],
    "s / vec3: ds, dv": [1.75, [-2.0, -0.5, -0.125]],
    "s / vec2d: ds, dv": [4.5, [-8.0, -0.125]],
    "s / mat22: ds, dm": [1.875, [-3.0, -0.75, -0.1875, -0.046875]],
    "s / quat: ds, dq": [1.875, [-2.0, -0.5, -0.125, -0.03125]],
    "wp.div(s, vec3) in a wp.func: ds, dv": [1.75, [-2.0, -0.5, -0.125]],
    "vec3 / s: ds, dv": [-0.4375, [0.25, 0.25, 0.25]],
    "s / s: ds": [0.25, -0.1875],
}
# What the releases up to 1.8.0 give where they differ: -dot(v, 1) / s**2 and s / 1.
RELEASED = {
    "s / vec3: ds, dv": [-1.75, [2.0, 2.0, 2.0]],
    "s / vec2d: ds, dv": [-9.0, [0.5, 0.5]],
    "s / mat22: ds, dm": [-1.6666666269302368, [3.0, 3.0, 3.0, 3.0]],
    "s / quat: ds, dq": [-3.75, [2.0, 2.0, 2.0, 2.0]],
    "wp.div(s, vec3) in a wp.func: ds, dv": [-1.75, [2.0, 2.0, 2.0]],
}


SCRIPT = """
import sys
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def total(s: warp.array(dtype=float), v: warp.array(dtype=warp.vec3), out: warp.array(dtype=float)):
    y = s[0] / v[0]
    out[0] = y[0] + y[1] + y[2]


KERNEL = total


def run():
    s = warp.array([2.0], dtype=float, device="cpu", requires_grad=True)
    v = warp.array([warp.vec3(1.0, 2.0, 4.0)], dtype=warp.vec3, device="cpu", requires_grad=True)
    out = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(total, dim=1, inputs=[s, v, out], device="cpu")
    tape.backward(loss=out)
    print("@@values", s.grad.numpy().tolist(), flush=True)
"""
WRONG, RIGHT = "[-1.75]", "[1.75]"


class TestScalarDivAdjoint(OverlayChecks):
    patch, gate, corpus, kernel = patch, GATE, __name__, divisions
    fixed, released = FIXED, RELEASED
    script, wrong, right = SCRIPT, WRONG, RIGHT


@GATE.unaffected_only
def test_harmless_outside_the_range_divisions_call_the_releases_functions(gpushim_patched):
    context = codegen_and_context(warp)[1]
    assert {type(function.native_func) for function in context.builtin_functions["div"].overloads} == {str}
