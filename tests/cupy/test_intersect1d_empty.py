"""cupy.intersect1d_empty: ``intersect1d`` with an empty array reads ``bins[-1]`` on the device (cupy/cupy#9557).

The read is in the kernels' bodies, which the host runs here: compiled by
its C++ compiler, with every bin they read recorded (``intersect_corpus``).
A read before the start of an empty allocation is what faults on a device;
that it faults, and the CUDA context it leaves unusable, only a device
shows (``test_gpu_intersect1d_empty.py``).  ``intersect1d``'s dtype is its
Python code's, run on NumPy arrays.
"""

from __future__ import annotations

import pytest

cupy = pytest.importorskip("cupy")

import wrapt

from gpushim import ProbeCannotRun
from gpushim.patches.cupy._host_kernel import run_body
from gpushim.patches.cupy._kernels import signature
from gpushim.patches.cupy.intersect1d_empty import EMPTY, patch
from tests.cupy import intersect_corpus
from tests.support import applied, gate, record_corpus, refusal

GATE = gate(patch)
try:
    from cupy._sorting import search

    run_body(search._exists_kernel, {"S": "double", "T": "double"}, [])
except ProbeCannotRun as error:
    pytest.skip(str(error), allow_module_level=True)

NO_BINS = [call for call, given in intersect_corpus.body_calls().items() if not given["bins"]]
READING = [call for call in NO_BINS if "nan" not in call]  # a NaN is placed past the bins before any is read
MIXED = "[1, 2] int32 & empty float64 assume_unique=False return_indices=False"


@GATE.affected_only
def test_needed_with_no_bins_the_kernels_read_bins_minus_1_without_gpushim():
    for name, calls in intersect_corpus.bodies().items():
        assert {call: calls[call]["bins"][:1] for call in READING} == {call: [-1] for call in READING}, name


@GATE.affected_only
def test_needed_the_intersection_keeps_the_first_dtype_without_gpushim():
    assert intersect_corpus.intersect1d()[MIXED] == {"values": [], "dtype": "int32"}


@GATE.affected_only
def test_effective_with_no_bins_nothing_is_read_or_found(this_patch):
    for name, calls in intersect_corpus.bodies().items():
        for call in NO_BINS:
            given = intersect_corpus.body_calls()[call]
            assert calls[call]["bins"] == [] and calls[call]["out"] == str(int(given["invert"])), (name, call)
            assert calls[call].get("y", "0") == "0"


@GATE.affected_only
def test_effective_with_bins_the_bodies_are_the_release_s():
    released = intersect_corpus.bodies()
    with applied(patch):
        patched = intersect_corpus.bodies()
    for name in intersect_corpus.KERNELS:
        assert {call: patched[name][call] for call in released[name] if call not in NO_BINS} == {
            call: released[name][call] for call in released[name] if call not in NO_BINS
        }


@GATE.affected_only
def test_effective_the_intersection_has_the_common_dtype(this_patch):
    assert intersect_corpus.intersect1d()[MIXED] == {"values": [], "dtype": "float64"}


@GATE.affected_only
def test_effective_the_kernels_are_the_release_s_but_for_the_check():
    released = {name: getattr(search, name) for name in intersect_corpus.KERNELS}
    with applied(patch):
        for name, kernel in released.items():
            fixed = getattr(search, name)
            assert fixed.__wrapped__ is kernel and type(fixed).__mro__[1] is cupy.ElementwiseKernel
            assert (fixed.name, fixed.kwargs, fixed.preamble) == (kernel.name, kernel.kwargs, kernel.preamble)
            assert signature(fixed.in_params + fixed.out_params) == signature(kernel.in_params + kernel.out_params)
            assert fixed.operation.endswith(kernel.operation) and "if (n_bins == 0)" in fixed.operation


@GATE.affected_only
def test_effective_a_call_that_does_not_bind_is_refused_by_the_release(this_patch):
    patched, released = refusal(cupy.intersect1d, None, None, axes=1)
    assert patched == released


@GATE.affected_only
def test_effective_the_probe_finds_no_read(this_patch):
    assert EMPTY in intersect_corpus.body_calls().values()
    assert patch.probe() is None


@GATE.unaffected_only
def test_harmless_not_affected_and_intersect1d_and_the_kernels_are_cupys_own(gpushim_patched):
    assert gpushim_patched.record(patch.id)["state"] == "not-affected"
    assert not isinstance(cupy.intersect1d, wrapt.ObjectProxy)
    assert all(type(getattr(search, name)) is cupy.ElementwiseKernel for name in intersect_corpus.KERNELS)


@GATE.recorded_only
def test_faithful_outcomes_of_the_corpus():
    """Patched old releases record what unpatched 14.0.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, intersect_corpus.run)
    assert [len(calls) for calls in outcomes["bodies"].values()] == [30, 30]
    assert len(outcomes["intersect1d"]) == 144
