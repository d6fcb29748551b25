"""cupy.jit_inf_nan: infinite and NaN constants in the source cupyx.jit writes (cupy/cupy#8707).

Before 13.4.0, ``cupyx.jit`` writes ``x[threadIdx.x] = inff;`` for
``x[threadIdx.x] = cupy.inf``, which nvrtc rejects; with gpushim it writes the
source 13.4.0 writes (``CUDART_INF_F``, ``nan("")``, complex parts with their
suffixes).  Every kernel is transpiled on the CPU (see ``jit_constants``), and
a few of the upstream tests' kernels are compiled by the real NVRTC (see
``nvrtc``); running them is the business of ``test_gpu_jit_inf_nan.py``.
"""

import pytest

cupy = pytest.importorskip("cupy")

from gpushim.patches.cupy.jit_inf_nan import _BARE, patch
from tests.cupy import jit_constants, nvrtc
from tests.support import applied, gate, record_faithful

GATE = gate(patch)
# Upstream tests' kernels for NVRTC, as (dtype, constant): inf and nan, real and complex.
NVRTC_KERNELS = (("f", "inf"), ("d", "nan"), ("F", "nan"))


def cuda_types():
    from cupyx.jit import _cuda_types

    return _cuda_types


def stores(constants, arrays=jit_constants.ARRAYS):
    """The corpus cases storing one of ``constants`` into one of ``arrays``, in both modes."""
    return [
        f"store {name} into {dtype} ({mode})" for name in constants for dtype in arrays for mode in jit_constants.MODES
    ]


def bare(outcomes):
    """The cases whose CUDA source (not an error, which quotes the Python source) has a bare identifier."""
    return sorted(case for case, source in outcomes.items() if "__global__" in source and _BARE.search(source))


def upstream_kernels():
    """``{"<constant> into <dtype>": (source, options)}`` that ``cupyx.jit`` hands to the compiler."""
    return {
        f"{constant} into {dtype}": nvrtc.jit(jit_constants.upstream_test(dtype, constant), dtype)
        for dtype, constant in NVRTC_KERNELS
    }


@GATE.affected_only
def test_needed_the_seed_is_written_with_a_bare_identifier_without_gpushim():
    source = jit_constants.transpile(jit_constants.storing(cupy.inf), "float32")
    assert "x[threadIdx.x] = inff;" in source


@GATE.affected_only
def test_needed_every_non_finite_constant_is_written_bare_without_gpushim():
    outcomes = jit_constants.run()
    written = [case for case in stores(jit_constants.NON_FINITE) if not outcomes[case].startswith("TypeError")]
    assert len(written) >= 100
    assert set(written) <= set(bare(outcomes))
    assert {f"upstream {c} {d}" for c in ("inf", "nan") for d in "efdFD"} <= set(bare(outcomes))


@GATE.affected_only
def test_needed_nvrtc_rejects_the_upstream_tests_kernels_without_gpushim():
    rejections = nvrtc.rejections(upstream_kernels())
    assert [kernel for kernel, log in rejections.items() if log is None] == []


@GATE.affected_only
def test_effective_nvrtc_compiles_the_upstream_tests_kernels(this_patch):
    rejections = nvrtc.rejections(upstream_kernels())
    assert {kernel: log for kernel, log in rejections.items() if log is not None} == {}


@GATE.unaffected_only
def test_harmless_nvrtc_compiles_the_upstream_tests_kernels_which_gpushim_leaves_alone():
    kernels = upstream_kernels()
    with applied(patch):
        assert upstream_kernels() == kernels
    rejections = nvrtc.rejections(kernels)
    assert {kernel: log for kernel, log in rejections.items() if log is not None} == {}


@GATE.affected_only
def test_effective_no_constant_is_written_bare(this_patch):
    outcomes = jit_constants.run()
    assert bare(outcomes) == []
    assert "x[threadIdx.x] = CUDART_INF_F;" in outcomes["store inf into float32 (cuda)"]
    assert "x[threadIdx.x] = -CUDART_INF;" in outcomes["store -inf into float64 (numpy)"]
    assert 'complex<float>(CUDART_INF_F, nanf(""))' in outcomes["store complex64 inf nan into complex64 (cuda)"]


@GATE.affected_only
def test_effective_finite_real_constants_keep_the_releases_text():
    finite = [name for name in jit_constants.CONSTANTS if name not in jit_constants.NON_FINITE + ["2**70"]]
    finite = [name for name in finite if "j" not in name]
    real = stores(finite, [dtype for dtype in jit_constants.ARRAYS if not dtype.startswith("complex")])
    released = jit_constants.run(real)
    with applied(patch):
        assert jit_constants.run(real) == released


@GATE.affected_only
def test_effective_an_integer_beyond_64_bits_is_refused_by_numpy_as_in_13_4_0(this_patch):
    outcome = jit_constants.run(["store 2**70 into int64 (cuda)"])["store 2**70 into int64 (cuda)"]
    assert outcome.startswith("TypeError: ufunc 'isfinite' not supported for the input types")


@GATE.recorded_only
def test_faithful_source_of_the_corpus(gpushim_patched):
    """Patched old releases record what unpatched 13.4.0 records; the matrix compares the files."""
    outcomes = jit_constants.run()
    assert len(outcomes) == len(jit_constants.cases())
    assert bare(outcomes) == []
    record_faithful(patch, outcomes)
