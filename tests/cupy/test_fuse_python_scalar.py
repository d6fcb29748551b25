"""cupy.fuse_python_scalar: Python scalar constants in fused functions under NumPy 2 (cupy/cupy#8536).

On CuPy 13.2.0-13.4.0 with NumPy 2 the first code generator of ``cupy.fuse``
raises NumPy's TypeError for ``1 + mu * dt * delta_phi``; with gpushim it
traces the same kernels as 13.4.1.  Everything is traced on the CPU with the
installed release (see ``fusion_tracing``); the second code generator is the
business of ``test_fuse_inf_nan.py``.
"""

import pytest

cupy = pytest.importorskip("cupy")

import numpy

from gpushim.patches.cupy import fuse_python_scalar
from gpushim.patches.cupy.fuse_python_scalar import patch
from tests.cupy import fusion_corpus, fusion_tracing
from tests.cupy.fusion_tracing import raises_numpy2_can_cast
from tests.support import gate, record_faithful

NUMPY2 = int(numpy.__version__.split(".")[0]) >= 2
GATE = gate(patch)
NEEDS_FIX = GATE.affected
CODES = "?bBhHiIlLqQefdFD"  # every dtype cupy.fuse handles


def fusion_module():
    from cupy._core import fusion

    return fusion


@GATE.affected_only
def test_needed_first_path_raises_numpy2_typeerror_without_gpushim():
    traced = fusion_tracing.trace_in_fresh_interpreter("first")
    failing = sorted(case for case, outcome in traced.items() if raises_numpy2_can_cast(outcome))
    assert "seed_python_scalar" in failing
    assert len(failing) >= 25, failing


@GATE.affected_only
@pytest.mark.parametrize("other", [None, "cupy.fuse_inf_nan"], ids=["with-fuse_inf_nan", "alone"])
@pytest.mark.parametrize("order", ["before", "after"], ids=["auto-before-cupy", "auto-after-cupy"])
def test_effective_first_path_traces_python_scalars(order, other):
    traced = fusion_tracing.trace_in_fresh_interpreter("first", gpushim=order, disable=other)
    assert not [case for case, outcome in traced.items() if raises_numpy2_can_cast(outcome)]
    assert "error" not in traced["seed_python_scalar"]


@GATE.recorded_only
def test_faithful_first_path_code_of_the_corpus(gpushim_patched):
    """Patched old releases record what unpatched 13.4.1 records; the matrix compares the files."""
    traced = fusion_tracing.trace(fusion_corpus.CASES, "first")
    assert len(traced) >= 25
    assert not [case for case, outcome in traced.items() if raises_numpy2_can_cast(outcome)]
    record_faithful(patch, traced)


@pytest.mark.skipif(not NUMPY2, reason="the 13.4.1 rule is compared with NumPy 2's can_cast")
def test_faithful_numpy_scalars_keep_numpys_own_can_cast_answer():
    """For NumPy scalars 13.4.1's promotion rule and NumPy 2's can_cast agree on every dtype pair."""
    namespace = fuse_python_scalar._NumPyForFusion(numpy)
    for source in CODES:
        for target in map(numpy.dtype, CODES):
            value = numpy.dtype(source).type(0)
            assert namespace.can_cast(value, target) == numpy.can_cast(value, target), (source, target)


@pytest.mark.skipif(not NUMPY2, reason="the 13.4.1 rule is compared with NumPy 2's can_cast")
def test_faithful_python_scalars_get_the_13_4_1_rule_and_dtypes_numpys():
    namespace = fuse_python_scalar._NumPyForFusion(numpy)
    for value in (True, 1, -1, 300, 0.5, float("inf"), float("nan"), 1j):
        for target in map(numpy.dtype, CODES):
            assert namespace.can_cast(value, target) == (numpy.result_type(value, target) == target)
    for source in CODES:
        for target in CODES:
            assert namespace.can_cast(numpy.dtype(source), target) == numpy.can_cast(source, target)


def test_patched_namespace_hands_out_numpys_own_objects():
    namespace = fuse_python_scalar._NumPyForFusion(numpy)
    for name in ("dtype", "generic", "ndarray", "result_type", "float64", "isscalar"):
        assert getattr(namespace, name) is getattr(numpy, name)


@GATE.affected_only
def test_applied_replaces_only_the_fusion_modules_numpy(gpushim_patched):
    state = next(r for r in gpushim_patched.status() if r["id"] == patch.id)["state"]
    assert state == "applied"
    assert isinstance(fusion_module().numpy, fuse_python_scalar._NumPyForFusion)
    from cupy._core import _fusion_variable, new_fusion

    assert new_fusion.numpy is numpy and _fusion_variable.numpy is numpy
