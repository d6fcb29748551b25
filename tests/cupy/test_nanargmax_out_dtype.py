"""cupy.nanargmax_out_dtype: the arguments nanargmax and nanargmin hand to their reductions (cupy/cupy#8783).

Before 13.4.0 the reduction gets ``out`` as its ``dtype`` and ``dtype`` as its
``out``, and ``argmax``/``argmin`` (bool and integer input) get neither, nor
``keepdims``; with gpushim they get what 13.4.0 gives them.  The calls are
observed as they happen and the real reductions run up to the device (see
``nanarg_corpus``); what the reductions compute on a device is the business of
``test_gpu_nanargmax_out_dtype.py``.
"""

import pytest

cupy = pytest.importorskip("cupy")

from gpushim.patches.cupy.nanargmax_out_dtype import patch
from tests.cupy import nanarg_corpus
from tests.support import gate, record_faithful

GATE = gate(patch)

FLOATS = [d for d in nanarg_corpus.DTYPES if d in "efdFD"]
INTEGERS = [d for d in nanarg_corpus.DTYPES if d not in "efdFD"]


def call_of(function, dtype, arguments):
    """The one reduction call of a corpus case, and the case's outcome."""
    case = f"{function} {dtype} {arguments}"
    outcome = nanarg_corpus.run([case])[case]
    assert len(outcome["calls"]) == 1, outcome
    return outcome["calls"][0], outcome["outcome"]


def search_module():
    from cupy._sorting import search

    return search


@GATE.affected_only
@pytest.mark.parametrize("function", nanarg_corpus.FUNCTIONS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_needed_the_reduction_gets_out_as_its_dtype_without_gpushim(function, dtype):
    (name, args), _ = call_of(function, dtype, "out")
    assert name == f"_{function}"
    assert (args["out"], args["dtype"]) == ("None", "out")


@GATE.affected_only
@pytest.mark.parametrize("function", nanarg_corpus.FUNCTIONS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_needed_a_dtype_is_refused_as_an_out_without_gpushim(function, dtype):
    _, outcome = call_of(function, dtype, "dtype=q")
    assert outcome == "TypeError: Argument 'out' has incorrect type (expected cupy._core.core._ndarray_base, got str)"


@GATE.affected_only
@pytest.mark.parametrize("function", nanarg_corpus.FUNCTIONS)
@pytest.mark.parametrize("dtype", INTEGERS)
def test_needed_integers_lose_out_dtype_and_keepdims_without_gpushim(function, dtype):
    (name, args), _ = call_of(function, dtype, "axis=0 keepdims out")
    assert (name, args) == (function[3:], {"a": "a", "axis": "0"})


@GATE.affected_only
@pytest.mark.parametrize("function", nanarg_corpus.FUNCTIONS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_effective_the_reduction_gets_out_and_dtype_in_their_places(function, dtype, this_patch):
    (name, args), _ = call_of(function, dtype, "dtype=q out")
    assert name == f"_{function}"
    assert (args["out"], args["dtype"], args["keepdims"]) == ("out", "'q'", "False")


@GATE.affected_only
@pytest.mark.parametrize("function", nanarg_corpus.FUNCTIONS)
@pytest.mark.parametrize("dtype", INTEGERS)
def test_effective_integers_hand_on_out_dtype_and_keepdims(function, dtype, this_patch):
    (name, args), _ = call_of(function, dtype, "axis=0 keepdims out")
    assert (name, args) == (function[3:], {"a": "a", "axis": "0", "dtype": "None", "out": "out", "keepdims": "True"})


@GATE.affected_only
def test_effective_a_call_that_does_not_bind_is_refused_by_the_release(this_patch):
    with pytest.raises(TypeError) as patched:
        cupy.nanargmax(None, axis=0, axes=1)
    with pytest.raises(TypeError) as released:
        cupy.nanargmax.__wrapped__(None, axis=0, axes=1)
    assert str(patched.value) == str(released.value)


@GATE.recorded_only
def test_faithful_calls_and_outcomes_of_the_corpus(gpushim_patched):
    """Patched old releases record what unpatched 13.4.0 records; the matrix compares the files."""
    outcomes = nanarg_corpus.run()
    assert len(outcomes) == len(nanarg_corpus.FUNCTIONS) * len(nanarg_corpus.DTYPES) * len(nanarg_corpus.ARGUMENTS)
    assert all(len(outcome["calls"]) == 1 for outcome in outcomes.values())
    record_faithful(patch, outcomes)
