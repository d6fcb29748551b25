"""cupy.jit_inf_nan on a CUDA device: the kernels of cupy/cupy#8707's tests compiled and run.

13.4.0's tests of the fix (``TestRaw.test_inf``/``test_nan`` in
``tests/cupyx_tests/jit_tests/test_raw.py``) store
``cupy.dtype(dtype).type(cupy.inf)`` (and ``cupy.nan``) from every thread
into an array of 30 elements, for float16, float32, float64, complex64 and
complex128, and compare with ``numpy.full_like``.  The tests marked ``gpu``
run them: without gpushim the kernel's source must name the bare constant and
nvrtc must reject it on affected releases (in whatever words: NVRTC 12.6 finds
the C functions ``nan``/``nanf`` in its headers and reports a type mismatch),
with it the kernel must compile and write the constant.  CuPy's kernel cache
is keyed by the source, so a patched kernel, whose source is 13.4.0's, never
meets an unpatched one.  Without a device they are skipped with "no CUDA
device" (tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.jit_inf_nan import _BARE, patch
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)


def store(dtype, constant):
    """The upstream test: a kernel storing ``cupy.dtype(dtype).type(cupy.<constant>)``, launched; the array."""
    import cupy
    from cupyx import jit

    from tests.cupy.jit_constants import upstream_test

    x = cupy.zeros((30,), dtype=dtype)
    jit.rawkernel()(upstream_test(dtype, constant))((5,), (6,), (x,))
    return x


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("constant", ["inf", "nan"])
@pytest.mark.parametrize("dtype", "efdFD")
def test_needed_nvrtc_rejects_the_kernel_without_gpushim(dtype, constant):
    import cupy

    with pytest.raises(cupy.cuda.compiler.CompileException) as rejected:
        store(dtype, constant)
    bare = _BARE.search(rejected.value.source)
    assert bare and bare.group(1) == constant, rejected.value.source


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("constant", ["inf", "nan"])
@pytest.mark.parametrize("dtype", "efdFD")
def test_the_kernel_compiles_and_stores_the_constant(dtype, constant, this_patch):
    x = store(dtype, constant)
    expected = numpy.full((30,), getattr(numpy, constant), dtype=dtype)
    numpy.testing.assert_array_equal(x.get(), expected)
