"""cupy.fuse_inf_nan on a CUDA device: the reproducer of cupy/cupy#9005 compiled and run.

cupy/cupy#9005, "`cp.inf` still cannot be fused with cp.where and
cp.newaxis", found on CuPy 13.2 and 13.3, reads:

    import cupy as cp #version: 13.3.0
    @cp.fuse
    def cp_where(points, mask):
        return cp.where(mask[:, cp.newaxis], cp.inf, points)

    N=357899
    points = cp.random.random((N,2))
    mask = cp.random.random(N) > 0.5
    cp_where(points, mask) #will trigger an compiler exception complaining about "inf" is undefined.

The tests marked ``gpu`` run it as written, and its ``cp.nan`` variant:
without gpushim the kernel's source must name the bare constant and nvrtc
must reject it on affected releases (in whatever words: NVRTC 12.6 finds the
C function ``nan`` in its headers and reports a type mismatch), with gpushim
it must compile 13.4.1's kernel and give NumPy's result.  Without a device they
are skipped with "no CUDA device" (tests/gpu.py), and none of them has run
yet.  The probe's device branch is tested on the CPU, in test_fuse_probes.py.
"""

from __future__ import annotations

import pytest

from gpushim.patches.cupy.fuse_inf_nan import patch
from tests.cupy.gpu_kernels import FIXED_WHERE_INF_BODY, run_on_device
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)


def reproducer(constant: str) -> str:
    """The issue's code with ``constant`` (``inf`` or ``nan``), its result checked against NumPy's.

    Then the seed as the CPU corpus traces it (``seed_where_inf(mask,
    points)`` on ``(8,)`` and ``(8, 3)``), whose kernel body in 13.4.1 is
    recorded in ``gpu_kernels``.
    """
    return f"""
import numpy
import cupy as cp
@cp.fuse
def cp_where(points, mask):
    return cp.where(mask[:, cp.newaxis], cp.{constant}, points)

N=357899
points = cp.random.random((N,2))
mask = cp.random.random(N) > 0.5
try:
    out = cp_where(points, mask)
except cp.cuda.compiler.CompileException as error:
    result = {{"CompileException": str(error), "source": error.source}}
else:
    expected = numpy.where(mask.get()[:, numpy.newaxis], numpy.{constant}, points.get())
    result = {{"dtype": str(out.dtype), "expected dtype": str(expected.dtype), "shape": list(out.shape),
              "equal": bool(numpy.array_equal(out.get(), expected, equal_nan=True))}}

    @cp.fuse
    def seed_where_inf(mask, points):
        return cp.where(mask[:, cp.newaxis], cp.inf, points)

    seed_where_inf(cp.zeros((8,), bool), cp.zeros((8, 3)))
"""


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("constant", ["inf", "nan"])
def test_needed_nvrtc_rejects_the_reproducer_without_gpushim(tmp_path, constant):
    result, _ = run_on_device(reproducer(constant), tmp_path / "cache", gpushim=False)
    assert "CompileException" in result, result
    assert f"= {constant};" in result["source"], result


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("constant", ["inf", "nan"])
def test_reproducer_gives_numpy_result_and_compiles_the_fixed_kernel(tmp_path, constant):
    result, sources = run_on_device(reproducer(constant), tmp_path / "cache", gpushim=True)
    assert "CompileException" not in result, result["CompileException"]
    assert result == {"dtype": "float64", "expected dtype": "float64", "shape": [357899, 2], "equal": True}
    assert any(FIXED_WHERE_INF_BODY in source for source in sources), "13.4.1's kernel was not compiled"
