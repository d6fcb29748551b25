"""warp.mat_mul_float64_fma: float64 matrix products and ``ddot`` accumulate as 1.6.1's do (NVIDIA/warp#489).

One kernel on the CPU multiplies float64 matrices (2x2, 3x3, 2x3 by 3x2)
where float rounding loses what a double fma keeps, takes ``ddot`` of
float32 and float64 matrices where a fused and an unfused sum differ, and
the tape takes the gradient of a product (``adj_mul`` calls ``mul``); a
float32 product is the control.  The proofs that start interpreters run on
the lowest and highest affected release of the matrix only; the faithful
corpus on every one.
"""

from __future__ import annotations

from gpushim.patches.warp.mat_mul_float64_fma import patch
from tests.support import gate
from tests.warp.overlay_checks import OverlayChecks

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True

Mat22d = warp.types.matrix(shape=(2, 2), dtype=warp.float64)
Mat33d = warp.types.matrix(shape=(3, 3), dtype=warp.float64)
Mat23d = warp.types.matrix(shape=(2, 3), dtype=warp.float64)
Mat32d = warp.types.matrix(shape=(3, 2), dtype=warp.float64)


@warp.kernel
def products(
    a: warp.array(dtype=Mat22d),
    c: warp.array(dtype=Mat33d),
    d: warp.array(dtype=Mat23d),
    e: warp.array(dtype=Mat32d),
    f: warp.array(dtype=warp.mat22),
    out22: warp.array(dtype=Mat22d),
    out33: warp.array(dtype=Mat33d),
    dots: warp.array(dtype=warp.float64),
    dots32: warp.array(dtype=float),
    loss: warp.array(dtype=warp.float64),
):
    p = a[0] * a[1]
    out22[0] = p
    out22[1] = d[0] * e[0]
    out33[0] = c[0] * c[0]
    dots[0] = warp.ddot(a[2], a[3])
    dots32[0] = warp.ddot(f[0], f[1])
    dots32[1] = (f[0] * f[1])[0, 0]
    loss[0] = p[0, 0] + p[0, 1] + p[1, 0] + p[1, 1]


def run_corpus() -> dict:
    """Each product's entries, each ``ddot``, and the tape's gradient of a product's sum for its left factor."""
    x64, x32 = 1.0 + 2.0**-27, 1.0 + 2.0**-12
    a = warp.array(
        [
            Mat22d(1.000000001, 1.0, 0.1, 1.0 / 3.0),
            Mat22d(1.0, 0.0, 1.000000001, 1e-17),
            Mat22d(x64, x64, 0.0, 0.0),
            Mat22d(x64, -x64, 0.0, 0.0),
        ],
        dtype=Mat22d,
        device="cpu",
        requires_grad=True,
    )
    c = warp.array([Mat33d(1 / 3, 2 / 3, 0.1, 0.7, 1e-9, 1.0 + 2.0**-40, 3.0, 0.2, 1 / 7)], dtype=Mat33d, device="cpu")
    d = warp.array([Mat23d(0.1, 0.2, 0.3, 1 / 3, 1e-12, 1.0)], dtype=Mat23d, device="cpu")
    e = warp.array([Mat32d(1.0, 3.0, 7.0, 1.0 + 2.0**-30, 1 / 9, 5.0)], dtype=Mat32d, device="cpu")
    f = warp.array([warp.mat22(x32, x32, 0.0, 0.0), warp.mat22(x32, -x32, 0.0, 0.0)], dtype=warp.mat22, device="cpu")
    out22 = warp.zeros(2, dtype=Mat22d, device="cpu")
    out33 = warp.zeros(1, dtype=Mat33d, device="cpu")
    dots = warp.zeros(1, dtype=warp.float64, device="cpu")
    dots32 = warp.zeros(2, dtype=float, device="cpu")
    loss = warp.zeros(1, dtype=warp.float64, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(products, dim=1, inputs=[a, c, d, e, f, out22, out33, dots, dots32, loss], device="cpu")
    tape.backward(loss=loss)

    def listed(values):
        return [float(value) for value in values.flatten()]

    return {
        "2x2 * 2x2": listed(out22.numpy()[0]),
        "2x3 * 3x2": listed(out22.numpy()[1]),
        "3x3 * 3x3": listed(out33.numpy()[0]),
        "ddot float64": listed(dots.numpy()),
        "ddot float32, float32 product": listed(dots32.numpy()),
        "d sum(a * b) / da": listed(a.grad.numpy()[0]),
    }


FIXED = {
    "2x2 * 2x2": [2.000000002, 1e-17, 0.43333333366666665, 3.3333333333333333e-18],
    "2x3 * 3x2": [1.5333333333333334, 2.0000000001862643, 0.44444444445144443, 6.000000000001],
    "3x3 * 3x3": [
        0.8777777777777778,
        0.24222222288888887,
        0.7142857142863205,
        3.233333334036062,
        0.6666666666668485,
        0.21285714385727278,
        1.5685714285714285,
        2.0285714287714285,
        0.5204081632654881,
    ],
    "ddot float64": [-5.551115123125783e-17],
    "ddot float32, float32 product": [-5.960464477539063e-08, 1.00048828125],
    "d sum(a * b) / da": [1.0, 1.000000001, 1.0, 1.000000001],
}
# What 1.5.0 to 1.6.0 give where they differ: every term and sum rounded to float, ddot unfused.
RELEASED = {
    "2x2 * 2x2": [2.0, 9.99999983775159e-18, 0.4333333373069763, 3.3333333481822478e-18],
    "2x3 * 3x2": [1.5333333015441895, 2.0, 0.4444444477558136, 6.0],
    "3x3 * 3x3": [
        0.8777778148651123,
        0.24222223460674286,
        0.7142857909202576,
        3.2333333492279053,
        0.6666666865348816,
        0.21285715699195862,
        1.5685714483261108,
        2.028571367263794,
        0.5204081535339355,
    ],
    "ddot float64": [0.0],
    "ddot float32, float32 product": [0.0, 1.00048828125],
    "d sum(a * b) / da": [1.0, 1.0, 1.0, 1.0],
}


SCRIPT = """
import sys
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache

Mat22d = warp.types.matrix(shape=(2, 2), dtype=warp.float64)


@warp.kernel
def product(a: warp.array(dtype=Mat22d), out: warp.array(dtype=Mat22d)):
    out[0] = a[0] * a[1]


KERNEL = product


def run():
    a = warp.array([Mat22d(1.000000001, 1.0, 0.0, 1.0), Mat22d(1.0, 0.0, 1.000000001, 1.0)], dtype=Mat22d, device="cpu")
    out = warp.zeros(1, dtype=Mat22d, device="cpu")
    warp.launch(product, dim=1, inputs=[a, out], device="cpu")
    print("@@values", [float(out.numpy()[0][0][0])], flush=True)
"""
WRONG, RIGHT = "[2.0]", "[2.000000002]"


class TestMatMulFloat64Fma(OverlayChecks):
    patch, gate, corpus, kernel = patch, GATE, __name__, products
    fixed, released = FIXED, RELEASED
    script, wrong, right = SCRIPT, WRONG, RIGHT
