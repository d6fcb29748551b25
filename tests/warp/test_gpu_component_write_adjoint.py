"""warp.component_write_adjoint on a CUDA device: component writes in kernels built for ``cuda``.

NVIDIA/warp GH-583 and GH-1174 report that ``tape.backward()`` leaves the
gradients of a kernel's inputs at zero when it writes ``y[i].x = ...``; the
fix (NVIDIA/warp@560ad813b, 1.14.0) adds a helper to ``warp/native/array.h``
that the patch brings into the generated module instead, and its reverse
statement passes a lambda to it, which NVRTC compiles as device code.  The
script below writes a vector component, a struct field and a matrix element
from ``x`` on ``device="cuda"`` under a tape, seeded with ones: without
gpushim on 1.10.0 to 1.13.0 ``x.grad`` is zeros, with it 1.14.0's ``2 + 3 +
4``.  Without a device they are skipped with "no CUDA device" (tests/gpu.py),
and none of them has run yet.  The probe has no device branch (it runs its
kernel on the CPU).
"""

from __future__ import annotations

from gpushim.patches.warp.component_write_adjoint import patch
from tests.gpu import on_gpu
from tests.support import gate
from tests.warp.gpu_scripts import run_script

GATE = gate(patch)

SCRIPT = """
import numpy as np
import warp as wp

wp.config.quiet = True


@wp.struct
class Body:
    a: float


@wp.kernel
def components(
    x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), b: wp.array(dtype=Body), m: wp.array(dtype=wp.mat22)
):
    i = wp.tid()
    v[i].y = 2.0 * x[i]
    b[i].a = 3.0 * x[i]
    m[i][1, 0] = 4.0 * x[i]


x = wp.array([1.0, 2.0], dtype=float, device="cuda", requires_grad=True)
v = wp.zeros(2, dtype=wp.vec3, device="cuda", requires_grad=True)
b = wp.zeros(2, dtype=Body, device="cuda", requires_grad=True)
m = wp.zeros(2, dtype=wp.mat22, device="cuda", requires_grad=True)
one = Body()
one.a = 1.0
tape = wp.Tape()
with tape:
    wp.launch(components, dim=2, inputs=[x, v, b, m], device="cuda")
tape.backward(
    grads={
        v: wp.array(np.ones((2, 3)), dtype=wp.vec3, device="cuda"),
        b: wp.array([one, one], dtype=Body, device="cuda"),
        m: wp.array(np.ones((2, 2, 2)), dtype=wp.mat22, device="cuda"),
    }
)
result = {"x.grad": x.grad.numpy().tolist(), "v": v.numpy().tolist(), "device": str(x.device)}
"""


@on_gpu
@GATE.affected_only
def test_needed_component_writes_have_no_gradient_on_the_device_without_gpushim(tmp_path):
    result = run_script(SCRIPT, tmp_path, gpushim=False)
    assert result["device"].startswith("cuda")
    assert result["x.grad"] == [0.0, 0.0]


@on_gpu
@GATE.recorded_only
def test_component_writes_have_1_14_0s_gradient_on_the_device_with_gpushim(tmp_path):
    result = run_script(SCRIPT, tmp_path, gpushim=True)
    assert result["device"].startswith("cuda")
    assert result["x.grad"] == [9.0, 9.0]
    assert result["v"] == [[0.0, 2.0, 0.0], [0.0, 4.0, 0.0]]
