"""cupy.fuse_inf_nan: inf and nan constants in the second code generator of cupy.fuse (cupy/cupy#9005).

Before 13.4.1, ``cupy._core.new_fusion`` writes ``double v2 = inf;`` for
``cupy.where(mask[:, cupy.newaxis], cupy.inf, points)``, which nvrtc rejects;
with gpushim it writes the code 13.4.1 writes (``CUDART_INF``, ``CUDART_NAN``,
``1ll``, ``thrust::complex<double>(...)``).  Everything is traced on the CPU
with the installed release (see ``fusion_tracing``), and a few kernels are
compiled by the real NVRTC (see ``nvrtc``); the first code generator is the
business of ``test_fuse_python_scalar.py``.
"""

import pytest

cupy = pytest.importorskip("cupy")

import numpy

from gpushim.patches.cupy.fuse_inf_nan import patch
from tests.cupy import fusion_corpus, fusion_tracing, nvrtc
from tests.cupy.fusion_tracing import writes_bare_inf_or_nan
from tests.support import applied, gate, record_faithful

GATE = gate(patch)
AFFECTED = GATE.affected
# Second-path kernels for NVRTC: inf and nan constants in float64, float32, float16 and a complex128 expression.
NVRTC_CASES = ("seed_where_inf", "where_nan_float32", "maximum_nan_float16", "inf_plus_complex128")


def trace_scalar():
    from cupy._core import _fusion_variable

    return _fusion_variable._TraceScalar


def second_path_kernels(cases=NVRTC_CASES):
    """``{case: (source, options)}`` that the second code generator hands to the compiler for each case."""
    corpus = {case.id: case for case in fusion_corpus.CASES}
    return {case: nvrtc.fused(corpus[case].func, corpus[case].args, case) for case in cases}


@GATE.affected_only
def test_needed_second_path_writes_bare_inf_and_nan_without_gpushim():
    traced = fusion_tracing.trace_in_fresh_interpreter("second")
    bare = sorted(case for case, outcome in traced.items() if writes_bare_inf_or_nan(outcome))
    assert "seed_where_inf" in bare
    assert "= inf;" in traced["seed_where_inf"]["body"]
    assert len(bare) >= 10, bare


@GATE.affected_only
@pytest.mark.parametrize("other", [None, "cupy.fuse_python_scalar"], ids=["with-fuse_python_scalar", "alone"])
@pytest.mark.parametrize("order", ["before", "after"], ids=["auto-before-cupy", "auto-after-cupy"])
def test_effective_second_path_writes_cudart_constants(order, other):
    traced = fusion_tracing.trace_in_fresh_interpreter("second", gpushim=order, disable=other)
    assert not [case for case, outcome in traced.items() if writes_bare_inf_or_nan(outcome)]
    assert "double v2 = CUDART_INF;" in traced["seed_where_inf"]["body"]


@GATE.affected_only
def test_needed_nvrtc_rejects_the_second_paths_kernels_without_gpushim():
    rejections = nvrtc.rejections(second_path_kernels())
    assert [case for case, log in rejections.items() if log is None] == []


@GATE.affected_only
def test_effective_nvrtc_compiles_the_second_paths_kernels(this_patch):
    rejections = nvrtc.rejections(second_path_kernels())
    assert {case: log for case, log in rejections.items() if log is not None} == {}


@GATE.unaffected_only
def test_harmless_nvrtc_compiles_the_second_paths_kernels_which_gpushim_leaves_alone():
    kernels = second_path_kernels()
    with applied(patch):
        assert second_path_kernels() == kernels
    rejections = nvrtc.rejections(kernels)
    assert {case: log for case, log in rejections.items() if log is not None} == {}


@GATE.recorded_only
def test_faithful_nvrtc_rejects_a_complex_constant_with_a_nan_part_as_13_4_1_does(this_patch):
    """13.4.1 writes ``thrust::complex<double>(0.0, nan)`` (the patch's "Not backported"), and so does 14.2.0."""
    rejections = nvrtc.rejections(second_path_kernels(["complex_nan_plus_complex128"]))
    assert rejections["complex_nan_plus_complex128"] is not None


@GATE.recorded_only
def test_faithful_second_path_code_of_the_corpus(gpushim_patched):
    """Patched old releases record what unpatched 13.4.1 records; the matrix compares the files."""
    traced = fusion_tracing.trace(fusion_corpus.CASES, "second")
    assert len(traced) >= 25
    assert not [case for case, outcome in traced.items() if "error" in outcome]
    record_faithful(patch, traced)


@GATE.affected_only
def test_faithful_constants_are_named_by_get_cuda_scalar_repr(gpushim_patched):
    from cupy._core import _fusion_variable, _scalar

    memory = _fusion_variable._MemorySpace(7, 0)
    for value, dtype in [
        (numpy.inf, "float64"),
        (-numpy.inf, "float32"),
        (numpy.nan, "float16"),
        (1, "int64"),
        (3, "uint8"),
        (True, "bool"),
        (1 + 2j, "complex128"),
        (0.5, "float32"),
    ]:
        constant = trace_scalar()(memory, 0, numpy.dtype(dtype), const_value=value)
        assert constant.var_name == _scalar._get_cuda_scalar_repr(value, numpy.dtype(dtype))
    assert trace_scalar()(memory, 0, numpy.dtype("float64"), 0).var_name == "a7"


@GATE.affected_only
def test_the_patched_property_keeps_its_doc():
    with applied(patch):
        assert vars(trace_scalar())["var_name"].__doc__ == f"CUDA name of the scalar (patched by {patch.id})"
