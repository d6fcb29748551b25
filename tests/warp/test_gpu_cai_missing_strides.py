"""warp.cai_missing_strides on a CUDA device: Warp arrays over CuPy memory whose interface leaves out strides.

NVIDIA/warp#523, "Can't Initialize Array From Incomplete Cuda Array Interface
Description", reported on Warp 1.6.0:

    If an array ``points_array`` defines a ``__cuda_array_interface__`` but has
    no value set for the ``strides`` field, then calling
    ``wp.array(points_array, dtype=wp.vec3, device="cuda")`` fails since
    ``wp.array._init_from_data()`` tries to subscript the non-existing strides.

The tests marked ``gpu`` port it with CuPy as the producer (a C-contiguous
CuPy array says ``"strides": None``; a wrapper also leaves the key out), for
vectors and matrices, and read the arrays in a Warp kernel.  They need Warp
and CuPy in one environment, and a device; without one they are skipped with
"no CUDA device" (tests/gpu.py), and none of them has run yet.  The last two
tests run on the CPU: by pretending a driver they take the device branches of
the probe and of the CPU corpus (tests/warp/cai_corpus.py).
"""

from __future__ import annotations

import numpy
import pytest
from packaging.version import Version

from gpushim.patches.warp.cai_missing_strides import patch
from tests.gpu import on_gpu, pretend_a_device
from tests.support import answer_in_fresh_python, gate

GATE = gate(patch)
RELEASE = GATE.release
AFFECTED = GATE.affected

import warp as wp

# Before 1.6.0 Warp keeps an interface's shape for vector dtypes ((n, 3) vec3s, see the probe), which
# 1.6.0 changed, and brought this bug with the change.
reshaping = pytest.mark.skipif(
    Version(RELEASE[1]) < Version("1.6.0"), reason=f"warp-lang {RELEASE[1]} does not reshape into vector dtypes"
)
NONE_SUBSCRIPT = "TypeError: 'NoneType' object is not subscriptable"


@wp.kernel
def sum_of_squares(points: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    out[i] = wp.length_sq(points[i])


@wp.kernel
def sum_of_squares_2d(points: wp.array(dtype=wp.vec2d), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = wp.length_sq(points[i])


@wp.kernel
def traces_22(matrices: wp.array(dtype=wp.mat22), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    out[i] = wp.trace(matrices[i])


@wp.kernel
def traces_33(matrices: wp.array(dtype=wp.mat33), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    out[i] = wp.trace(matrices[i])


def squares(host):
    return (host**2).sum(axis=-1)


def traces(host):
    return numpy.trace(host, axis1=-2, axis2=-1)


# name: (shape of the CuPy array, its dtype, Warp dtype, kernel, what the kernel computes on the host)
CASES = {
    "vec3 f4 (n,3)": ((1000, 3), "float32", "vec3", sum_of_squares, squares),
    "vec2d f8 (n,2)": ((1000, 2), "float64", "vec2d", sum_of_squares_2d, squares),
    "mat22 f4 (n,2,2)": ((500, 2, 2), "float32", "mat22", traces_22, traces),
    "mat33 f4 (n,3,3)": ((500, 3, 3), "float32", "mat33", traces_33, traces),
}


class WithoutStridesKey:
    """A CuPy array whose interface leaves the optional ``strides`` key out, rather than saying None."""

    def __init__(self, array) -> None:
        self.array = array
        interface = dict(array.__cuda_array_interface__)
        interface.pop("strides", None)
        self.__cuda_array_interface__ = interface

    def __len__(self) -> int:
        return len(self.array)


@on_gpu
@GATE.affected_only
def test_needed_the_reproducer_fails_without_gpushim():
    code = (
        "import cupy, warp as wp\nwp.config.quiet = True\n"
        "points_array = cupy.ones((10, 3), cupy.float32)\n"
        "assert points_array.__cuda_array_interface__.get('strides') is None\n"
        "try:\n    wp.array(points_array, dtype=wp.vec3, device='cuda')\n"
        "except Exception as error:\n    raised = f'{type(error).__name__}: {error}'\n"
    )
    assert answer_in_fresh_python(code, "raised").startswith(NONE_SUBSCRIPT)


@on_gpu
@GATE.recorded_only
@reshaping
@pytest.mark.parametrize("strides", ["None", "absent"])
@pytest.mark.parametrize("case", list(CASES))
def test_arrays_over_cupy_memory_are_read_by_a_kernel(gpushim_patched, case, strides):
    """The array wraps the CuPy memory (same pointer), has the vector or matrix shape, and a kernel reads it."""
    import cupy

    shape, dtype, warp_dtype, kernel, on_host = CASES[case]
    wp.config.quiet = True
    source = cupy.random.default_rng(523).standard_normal(shape, dtype=dtype)
    assert source.__cuda_array_interface__.get("strides") is None
    data = source if strides == "None" else WithoutStridesKey(source)
    array = wp.array(data, dtype=getattr(wp, warp_dtype), device="cuda:0")
    assert array.ptr == source.data.ptr
    assert array.shape == (shape[0],)
    host = source.get()
    numpy.testing.assert_array_equal(array.numpy(), host)
    out = wp.zeros(shape[0], dtype=wp.float64 if dtype == "float64" else wp.float32, device="cuda:0")
    wp.launch(kernel, dim=shape[0], inputs=[array, out], device="cuda:0")
    numpy.testing.assert_allclose(out.numpy(), on_host(host), rtol=1e-5)


def test_probe_uses_warps_device_and_device_memory_where_a_device_is_present(monkeypatch):
    """On the CPU, with a pretended driver: the probe asks Warp for ``cuda:0`` and uses the driver's memory.

    Warp has no ``cuda:0`` here, so the CPU corpus's stand-in device answers
    for it; the verdict is the one the probe gives without a device.
    """
    from tests.warp.cai_corpus import fake_cuda_device

    driver = pretend_a_device(monkeypatch)
    asked, device = [], fake_cuda_device()
    monkeypatch.setattr(wp, "get_device", lambda name: asked.append(name) or device)
    verdict = patch.probe()
    assert asked == ["cuda:0"]
    assert driver.allocated == [48]
    assert driver.freed == [driver.POINTER]
    if AFFECTED:
        assert verdict.endswith(NONE_SUBSCRIPT.split(": ", 1)[1])
    else:
        assert verdict is None


def test_corpus_runs_on_warps_device_over_device_memory_where_a_device_is_present(monkeypatch):
    """On the CPU, with a pretended driver: the corpus takes Warp's ``cuda:0`` and the driver's memory.

    Warp has no ``cuda:0`` here, so the stand-in device answers for it again;
    the outcomes, which record pointers relative to the exporter's address,
    are those of the stand-in run.
    """
    from tests.warp import cai_corpus

    on_the_stand_in = cai_corpus.run_corpus()
    driver = pretend_a_device(monkeypatch)
    asked, stand_in = [], cai_corpus.fake_cuda_device()
    monkeypatch.setattr(wp, "get_device", lambda name: asked.append(name) or stand_in)
    with cai_corpus.cuda_target() as (device, address):
        assert address == driver.POINTER
        source = cai_corpus.Exporter((4,), "<f4", strides=(4,), address=address)
        assert wp.array(data=source, dtype=wp.float32, device=device).ptr == driver.POINTER
    assert cai_corpus.run_corpus() == on_the_stand_in
    assert asked == ["cuda:0", "cuda:0"]
    assert driver.allocated == [cai_corpus.DEVICE_BYTES] * 2
    assert driver.freed == [driver.POINTER, driver.POINTER + 0x100]
