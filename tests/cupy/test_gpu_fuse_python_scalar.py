"""cupy.fuse_python_scalar on a CUDA device: the reproducer of cupy/cupy#8536 compiled and run.

cupy/cupy#8536, "`cupy.fuse` unable to promote Python scalars in some cases
(NEP 50?)", reduced from cuCIM's ``chan_vese`` (rapidsai/cucim#742), reads:

    import cupy as cp

    delta_phi = cp.full((10, 10), 9.999999e-7, dtype=cp.float32)
    dt = cp.asarray(0.5, dtype=cp.float32)
    mu = cp.asarray(0.1, dtype=cp.float32)

    @cp.fuse()
    def fused_kernel(dt, mu, delta_phi):
        return 1 + mu * dt * delta_phi

    fused_kernel(dt, mu, delta_phi)

and NumPy 2's ``TypeError: can_cast() does not support Python ints, floats,
and complex ...``.  The tests marked ``gpu`` run it as written, with gpushim:
it must compile, give NumPy's result, and compile 13.4.1's kernel.  Without a
device they are skipped with "no CUDA device" (tests/gpu.py), and none of them
has run yet.  The probe's device branch is tested on the CPU, in
test_fuse_probes.py.
"""

from __future__ import annotations

import numpy

from gpushim.patches.cupy.fuse_python_scalar import patch
from tests.cupy.gpu_kernels import FIXED_SCALAR_OPERATION, run_on_device
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)

REPRODUCER = """
import cupy as cp

delta_phi = cp.full((10, 10), 9.999999e-7, dtype=cp.float32)
dt = cp.asarray(0.5, dtype=cp.float32)
mu = cp.asarray(0.1, dtype=cp.float32)

@cp.fuse()
def fused_kernel(dt, mu, delta_phi):
    return 1 + mu * dt * delta_phi

out = fused_kernel(dt, mu, delta_phi)
result = {"dtype": str(out.dtype), "shape": list(out.shape), "values": out.get().tolist()}
"""


@on_gpu
@GATE.recorded_only
def test_reproducer_gives_numpy_result_and_compiles_the_fixed_kernel(tmp_path):
    result, sources = run_on_device(REPRODUCER, tmp_path / "cache", gpushim=True)
    f4 = numpy.float32
    expected = 1 + numpy.asarray(0.1, f4) * numpy.asarray(0.5, f4) * numpy.full((10, 10), 9.999999e-7, f4)
    assert (result["dtype"], result["shape"]) == (str(expected.dtype), [10, 10])
    numpy.testing.assert_allclose(numpy.asarray(result["values"], f4), expected, rtol=1e-6)
    assert any(FIXED_SCALAR_OPERATION in source for source in sources), "13.4.1's kernel was not compiled"
