"""cupy.expm_pade_term on a CUDA device: the reproducer of cupy/cupy#9138 against SciPy.

cupy/cupy#9138, "`cupyx.linalg.expm` does" (its title as filed), reported
that ``_expm_inner`` sums ``b[8]*A`` where Higham's algorithm has ``b[8]*A2``,
and reproduced it with the exponential of an anti-Hermitian matrix, which
must be unitary:

    import numpy as np
    import cupy as cp
    from cupyx.scipy.linalg import expm
    from scipy.linalg import expm as sp_expm
    import unittest.mock

    dim = 10
    A = np.random.randn(dim**2).reshape((dim, dim)) + 1j * np.random.randn(dim**2).reshape((dim, dim))
    A = A - A.conj().T
    assert np.allclose(-A, A.conj().T)

    cp_unitary = expm(cp.array(A))
    sp_unitary = sp_expm(A)
    overlap_cp_cp = cp.abs(cp.trace(cp_unitary.conj().T @ cp_unitary))
    overlap_sp_sp = np.abs(np.trace(sp_unitary.conj().T @ sp_unitary))
    print(f"{overlap_sp_sp=}")  # will equal the dimension up to numberical precision
    print(f"{overlap_cp_cp=}")  # should equal to dim but it will not be.

(the report goes on to mock ``_expm_inner`` with a corrected copy, which is
what gpushim's patch does for good).  The tests marked ``gpu`` run it with a
seeded generator (``numpy.random.default_rng(0)``; the report's is unseeded)
and the generator of a rotation by 5 radians, whose exponential is known.
Without gpushim, on affected releases, the device's result must be off
SciPy's as the release's code run on NumPy is (by 4e-7 for the seeded matrix,
1e-4 for the rotation: the CPU half of the proof); with gpushim it must be
SciPy's to 1e-12, as 13.5.0's is, and unitary.  Without a device they are
skipped with "no CUDA device" (tests/gpu.py), and none of them has run yet.
The probe has no device branch (it runs the release's code on NumPy); the
last test runs on the CPU and takes the GPU branch of ``fusion_tracing``,
through which the CPU half traces ``expm``'s kernel.
"""

from __future__ import annotations

import inspect
import math
import sys

import numpy
import pytest

from gpushim import ProbeCannotRun
from gpushim.patches.cupy.expm_pade_term import MODULE, _expm_on_numpy, _import_linalg, patch
from tests.gpu import on_gpu, pretend_a_device
from tests.support import gate

GATE = gate(patch)


def linalg():
    """``cupyx.scipy.linalg``, or the test is skipped saying why it cannot be imported."""
    try:
        return _import_linalg()
    except (ImportError, ProbeCannotRun) as error:
        pytest.skip(f"cupyx.scipy.linalg cannot be imported: {error}")


def reported_matrix():
    """cupy/cupy#9138's anti-Hermitian matrix, from a seeded generator."""
    rng = numpy.random.default_rng(0)
    dim = 10
    A = rng.standard_normal(dim**2).reshape((dim, dim)) + 1j * rng.standard_normal(dim**2).reshape((dim, dim))
    A = A - A.conj().T
    assert numpy.allclose(-A, A.conj().T)
    return A


MATRICES = {
    "cupy/cupy#9138": reported_matrix,
    "rotation by 5 rad": lambda: numpy.array([[0.0, 5.0], [-5.0, 0.0]]),
}


def off_scipy(result, a) -> float:
    scipy_linalg = pytest.importorskip("scipy.linalg")
    exact = scipy_linalg.expm(a)
    return float(numpy.linalg.norm(result - exact) / numpy.linalg.norm(exact))


def on_the_device(a):
    import cupy

    return linalg().expm(cupy.asarray(a)).get()


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("case", list(MATRICES))
def test_needed_the_device_is_off_as_the_release_code_on_numpy(case):
    a = MATRICES[case]()
    mine = on_the_device(a)
    on_numpy = _expm_on_numpy(sys.modules[MODULE])(a)
    assert off_scipy(mine, a) > 1e-8
    assert numpy.linalg.norm(mine - on_numpy) / numpy.linalg.norm(on_numpy) < 1e-12


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("case", list(MATRICES))
def test_reproducer_gives_scipys_unitary(case, gpushim_patched):
    a = MATRICES[case]()
    mine = on_the_device(a)
    assert off_scipy(mine, a) < 1e-12
    overlap = abs(numpy.trace(mine.conj().T @ mine))
    assert math.isclose(overlap, len(a), rel_tol=1e-12), overlap


def test_kernel_is_traced_in_cupys_own_memory_where_a_device_is_present(monkeypatch):
    """On the CPU, ``fusion_tracing``'s GPU branch: ``expm``'s fused function traced with CuPy's allocator.

    An allocator that hands out untouched memory stands in, for this test,
    for the memory pool CuPy would use on a device; the trace must leave it in
    place and give the kernel the CPU half records.
    """
    import cupy

    from tests.cupy import fusion_tracing

    linalg()
    body = sys.modules[MODULE]._expm_inner.func
    matrices = len(inspect.signature(body).parameters) - 1

    def trace():
        with fusion_tracing.fake_device_memory():
            args = tuple(cupy.empty((4, 4), "float64") for _ in range(matrices)) + (cupy.empty((14,), "float64"),)
            return cupy.cuda.get_allocator(), fusion_tracing.trace_second_path(body, args, "_expm_inner")

    _, without_device = trace()
    pretend_a_device(monkeypatch)
    with fusion_tracing.untouched_allocator() as device_pool:
        allocator, with_device = trace()
    assert allocator is device_pool
    assert "error" not in without_device, without_device
    assert with_device == without_device
