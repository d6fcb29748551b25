"""cupy.hilbert2_second_axis: ``cupyx.scipy.signal.hilbert2`` never builds its second filter (cupy/cupy#9396).

``hilbert2``'s own Python code builds the filters, so everything runs on the
CPU: the release's code on NumPy arrays (``hilbert2_corpus``), against
``scipy.signal.hilbert2``.  What CuPy's FFTs make of it on a device is the
business of ``test_gpu_hilbert2_second_axis.py``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("cupy")

import numpy
import scipy.signal
import wrapt

from gpushim.patches.cupy.hilbert2_second_axis import patch
from tests.cupy import hilbert2_corpus
from tests.cupy.signal_tests import signal_or_skip
from tests.support import applied, gate, record_corpus, refusal

GATE = gate(patch)
signal = signal_or_skip()

REAL_2D = [case for case, outcome in hilbert2_corpus.run().items() if isinstance(outcome, dict)]


def scipys(case):
    x, n = hilbert2_corpus.cases()[case]
    return scipy.signal.hilbert2(numpy.atleast_2d(hilbert2_corpus.X[x]), hilbert2_corpus.N[n])


def found(outcome):
    return numpy.array([complex(value) for value in outcome["values"]]).reshape(outcome["shape"])


@GATE.affected_only
def test_needed_every_result_is_zero_without_gpushim():
    outcomes = hilbert2_corpus.run()
    assert REAL_2D and all(not found(outcomes[case]).any() for case in REAL_2D)
    assert numpy.abs(scipys("x=(7, 9) N=None")).max() > 2


@GATE.affected_only
@pytest.mark.parametrize("case", REAL_2D)
def test_effective_the_results_are_scipys(case, this_patch):
    result = found(hilbert2_corpus.run()[case])
    assert numpy.allclose(result, scipys(case), rtol=1e-5, atol=1e-4)


@GATE.affected_only
def test_effective_the_errors_are_the_release_s():
    released = hilbert2_corpus.run()
    with applied(patch):
        patched = hilbert2_corpus.run()
    errors = {case for case, outcome in released.items() if isinstance(outcome, str)}
    assert errors and {case: patched[case] for case in errors} == {case: released[case] for case in errors}


@GATE.affected_only
def test_effective_a_call_that_does_not_bind_is_refused_by_the_release(this_patch):
    patched, released = refusal(signal.hilbert2, None, N=2, axes=1)
    assert patched == released


@GATE.unaffected_only
def test_harmless_not_affected_and_hilbert2_is_cupys_own(gpushim_patched):
    assert gpushim_patched.record(patch.id)["state"] == "not-affected"
    assert not isinstance(signal.hilbert2, wrapt.ObjectProxy)
    assert signal.hilbert2.__module__ == "cupyx.scipy.signal._signaltools"


@GATE.recorded_only
def test_faithful_outcomes_of_the_corpus():
    """Patched old releases record what unpatched 14.0.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, hilbert2_corpus.run)
    assert len(outcomes) == len(hilbert2_corpus.cases()) == 42
