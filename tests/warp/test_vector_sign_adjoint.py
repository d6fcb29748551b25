"""warp.vector_sign_adjoint: the gradient of ``wp.sign`` of a vector (NVIDIA/warp#1466).

One kernel takes the sign of vectors of float32 and float64, in a kernel and
in a ``wp.func``, and the tape takes the gradient of each sum; ``dot(sign(u),
u)`` shows the sign's gradient adding to another; the controls are the
vector ``abs`` and the scalar ``sign``.
"""

from __future__ import annotations

from gpushim.patches.warp.vector_sign_adjoint import patch
from tests.support import gate
from tests.warp.overlay_checks import OverlayChecks

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True

Vec2d = warp.types.vector(length=2, dtype=warp.float64)


@warp.func
def sign_in_a_function(v: warp.vec3):
    return warp.sign(v)


@warp.kernel
def signs(
    v: warp.array(dtype=warp.vec3),
    w: warp.array(dtype=Vec2d),
    x: warp.array(dtype=float),
    out: warp.array(dtype=float),
    out64: warp.array(dtype=warp.float64),
):
    s = warp.sign(v[0])
    out[0] = s[0] + s[1] + s[2]
    t = warp.sign(w[0])
    out64[0] = t[0] + t[1]
    out[1] = warp.dot(warp.sign(v[1]), v[1])
    f = sign_in_a_function(v[2])
    out[2] = f[0] + f[1] + f[2]
    a = warp.abs(v[3])  # controls: the vector abs, the scalar sign
    out[3] = a[0] + a[1] + a[2]
    out[4] = warp.sign(x[0]) * x[0]


def run_corpus() -> dict:
    """Each sum's value and the tape's gradient of it."""
    vectors = [
        warp.vec3(1.0, -2.0, 3.0),
        warp.vec3(1.0, -2.0, 0.0),
        warp.vec3(-0.5, 4.0, -8.0),
        warp.vec3(1.0, -2.0, 3.0),
    ]
    v = warp.array(vectors, dtype=warp.vec3, device="cpu", requires_grad=True)
    w = warp.array([Vec2d(0.5, -0.25)], dtype=Vec2d, device="cpu", requires_grad=True)
    x = warp.array([-2.0], dtype=float, device="cpu", requires_grad=True)
    out = warp.zeros(5, dtype=float, device="cpu", requires_grad=True)
    out64 = warp.zeros(1, dtype=warp.float64, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(signs, dim=1, inputs=[v, w, x, out, out64], device="cpu")
    ones = warp.ones(5, dtype=float, device="cpu")
    tape.backward(grads={out: ones, out64: warp.ones(1, dtype=warp.float64, device="cpu")})
    dv = v.grad.numpy().tolist()
    return {
        "sums": out.numpy().tolist() + out64.numpy().tolist(),
        "sign(vec3)": dv[0],
        "sign(vec2d)": w.grad.numpy().tolist()[0],
        "dot(sign(u), u)": dv[1],
        "sign(vec3) in a wp.func": dv[2],
        "abs(vec3)": dv[3],
        "sign(x) * x": x.grad.numpy().tolist(),
    }


FIXED = {
    "sums": [1.0, 3.0, -1.0, 6.0, 2.0, 0.0],
    "sign(vec3)": [0.0, 0.0, 0.0],
    "sign(vec2d)": [0.0, 0.0],
    "dot(sign(u), u)": [1.0, -1.0, 1.0],
    "sign(vec3) in a wp.func": [0.0, 0.0, 0.0],
    "abs(vec3)": [1.0, -1.0, 1.0],
    "sign(x) * x": [-1.0],
}
# What 1.3.0 to 1.13.x give where they differ: the gradient of abs, added to the rest.
RELEASED = {
    "sign(vec3)": [1.0, -1.0, 1.0],
    "sign(vec2d)": [1.0, -1.0],
    "dot(sign(u), u)": [2.0, 1.0, 1.0],
    "sign(vec3) in a wp.func": [-1.0, 1.0, -1.0],
}


SCRIPT = """
import sys
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def total(v: warp.array(dtype=warp.vec3), out: warp.array(dtype=float)):
    s = warp.sign(v[0])
    out[0] = s[0] + s[1] + s[2]


KERNEL = total


def run():
    v = warp.array([warp.vec3(1.0, -2.0, 3.0)], dtype=warp.vec3, device="cpu", requires_grad=True)
    out = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(total, dim=1, inputs=[v, out], device="cpu")
    tape.backward(loss=out)
    print("@@values", v.grad.numpy()[0].tolist(), flush=True)
"""
WRONG, RIGHT = "[1.0, -1.0, 1.0]", "[0.0, 0.0, 0.0]"


class TestVectorSignAdjoint(OverlayChecks):
    patch, gate, corpus, kernel = patch, GATE, __name__, signs
    fixed, released = FIXED, RELEASED
    script, wrong, right = SCRIPT, WRONG, RIGHT
