"""warp.augassign_mul_div on a CUDA device: in-place ``*=`` and ``/=`` on array elements in kernels built for ``cuda``.

NVIDIA/warp#342, "[BUG] Incorrect code generation with in-place division when
using Warp 1.4.0+", opens with "I have a program that works fine with Warp
1.3.1 and breaks with Warp 1.4.0+. I've found one kernel so far that leads to
issues:", a tridiagonal solver whose first lines read:

    @wp.kernel
    def trisolve_periodic_multi(x: wp.array2d(dtype=Any),
                                q: wp.array2d(dtype=Any),
                                s: wp.array2d(dtype=Any),
                                qe: wp.array2d(dtype=Any),
                                ap: wp.array2d(dtype=Any),
                                am: wp.array2d(dtype=Any),
                                ac: wp.array2d(dtype=Any),
                                n: int):

      irhs = wp.tid()

      q[0, irhs] = -ap[0, irhs] / ac[0, irhs]
      s[0, irhs] = -am[0, irhs] / ac[0, irhs]
      fn = x[n - 1, irhs]
      x[0, irhs] /= ac[0, irhs]

The fix (NVIDIA/warp@a02f499, in 1.4.2 as 5232f780d) adds this regression
test, run on every device:

    def test_array_inplace_non_diff_ops(test, device):
        N = 3
        x1 = wp.full(N, value=10.0, dtype=float, device=device)
        y1 = wp.full(N, value=5.0, dtype=float, device=device)

        wp.launch(inplace_mul_1d, N, inputs=[x1, y1], device=device)
        assert_np_equal(x1.numpy(), np.full(N, fill_value=50.0, dtype=float))

        x1.fill_(10.0)
        y1.fill_(5.0)
        wp.launch(inplace_div_1d, N, inputs=[x1, y1], device=device)
        assert_np_equal(x1.numpy(), np.full(N, fill_value=2.0, dtype=float))

with ``x[i] *= y[i]`` and ``x[i] /= y[i]`` as the kernels.  The tests marked
``gpu`` run the reporter's statement ``x[0, irhs] /= ac[0, irhs]`` on 2-d
float32 and float64 arrays and the regression test on ``device="cuda"``; with
gpushim the results are 1.4.2's (divided, multiplied), without it on 1.4.0 and
1.4.1 the arrays are left as they were.  Without a device they are skipped with
"no CUDA device" (tests/gpu.py), and none of them has run yet.  The probe has
no device branch (it runs its kernel on the CPU).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gpushim.patches.warp.augassign_mul_div import patch
from tests.gpu import on_gpu
from tests.support import gate
from tests.warp.gpu_scripts import run_script

GATE = gate(patch)

import warp as wp

DEVICE = "cuda"


@wp.kernel
def first_row_divided(x: wp.array2d(dtype=Any), ac: wp.array2d(dtype=Any)):
    irhs = wp.tid()
    x[0, irhs] /= ac[0, irhs]


for _scalar in (wp.float32, wp.float64):
    wp.overload(first_row_divided, [wp.array2d(dtype=_scalar), wp.array2d(dtype=_scalar)])


@wp.kernel
def inplace_mul_1d(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    x[i] *= y[i]


@wp.kernel
def inplace_div_1d(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    x[i] /= y[i]


# The fix's regression test as a script on the device, with the values after each launch kept in ``result``.
REGRESSION_TEST = """
import warp as wp

wp.config.quiet = True


@wp.kernel
def inplace_mul_1d(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    x[i] *= y[i]


@wp.kernel
def inplace_div_1d(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    x[i] /= y[i]


N = 3
x1 = wp.full(N, value=10.0, dtype=float, device="cuda")
y1 = wp.full(N, value=5.0, dtype=float, device="cuda")

wp.launch(inplace_mul_1d, N, inputs=[x1, y1], device="cuda")
result = {"mul": x1.numpy().tolist()}

x1.fill_(10.0)
y1.fill_(5.0)
wp.launch(inplace_div_1d, N, inputs=[x1, y1], device="cuda")
result["div"] = x1.numpy().tolist()
result["device"] = str(x1.device)
"""


@on_gpu
@GATE.affected_only
def test_needed_the_regression_test_leaves_the_arrays_without_gpushim(tmp_path):
    result = run_script(REGRESSION_TEST, tmp_path, gpushim=False)
    assert result["device"].startswith("cuda")
    assert (result["mul"], result["div"]) == ([10.0] * 3, [10.0] * 3)


@on_gpu
@GATE.recorded_only
def test_regression_test_gives_the_fixed_values_with_gpushim(tmp_path):
    result = run_script(REGRESSION_TEST, tmp_path, gpushim=True)
    assert result["device"].startswith("cuda")
    assert (result["mul"], result["div"]) == ([50.0] * 3, [2.0] * 3)


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reporters_in_place_division_divides_the_first_row(this_patch, dtype):
    """``x[0, irhs] /= ac[0, irhs]`` over four right-hand sides: row 0 divided, the others as they were."""
    n, rhs = 5, 4
    x_host = np.arange(1, n * rhs + 1, dtype=dtype).reshape(n, rhs)
    ac_host = np.full((n, rhs), 4.0, dtype=dtype)
    x = wp.array(x_host, dtype=getattr(wp, dtype), device=DEVICE)
    ac = wp.array(ac_host, dtype=getattr(wp, dtype), device=DEVICE)
    wp.launch(first_row_divided, dim=rhs, inputs=[x, ac], device=DEVICE)
    expected = x_host.copy()
    expected[0] /= ac_host[0]
    np.testing.assert_array_equal(x.numpy(), expected)


@on_gpu
@GATE.recorded_only
def test_in_place_multiply_and_divide_in_this_process(this_patch):
    """The regression test's kernels launched here, after gpushim patched Warp in this process."""
    x1 = wp.full(3, value=10.0, dtype=float, device=DEVICE)
    y1 = wp.full(3, value=5.0, dtype=float, device=DEVICE)
    wp.launch(inplace_mul_1d, 3, inputs=[x1, y1], device=DEVICE)
    assert x1.numpy().tolist() == [50.0] * 3
    x1.fill_(10.0)
    wp.launch(inplace_div_1d, 3, inputs=[x1, y1], device=DEVICE)
    assert x1.numpy().tolist() == [2.0] * 3
