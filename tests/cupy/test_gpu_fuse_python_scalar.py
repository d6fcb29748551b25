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
has run yet.  The last test runs on the CPU: it takes the probe's device
branch by pretending a driver.
"""

from __future__ import annotations

import numpy

from gpushim.patches.cupy.fuse_python_scalar import patch
from tests.cupy.gpu_kernels import FIXED_SCALAR_OPERATION, run_on_device
from tests.gpu import on_gpu, pretend_a_device
from tests.support import gate

GATE = gate(patch)
NEEDS_FIX = GATE.affected  # the release and NumPy 2 (only_with)

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


def test_probe_keeps_cupys_allocator_where_a_device_is_present(monkeypatch):
    """On the CPU, with a pretended driver: the probe leaves CuPy's allocator alone (the device's memory).

    The allocator that hands out untouched memory stands in, for this test,
    for the memory pool CuPy would use on a device.
    """
    import cupy

    from tests.cupy.fusion_tracing import untouched_allocator

    pretend_a_device(monkeypatch)
    with untouched_allocator() as device_pool:
        verdict = patch.probe()
        assert cupy.cuda.get_allocator() is device_pool
    assert (verdict is not None) == NEEDS_FIX
