"""cupy.quantile_keepdims: ``quantile``/``percentile`` with an integer axis and ``keepdims=True`` (cupy/cupy#8808).

Before 13.4.0 such a call raises ``TypeError: 'int' object is not iterable``
on the host, before any device work; with gpushim it goes on, as in 13.4.0,
to its first call to the driver (see ``quantile_corpus``).  The results it
computes there are the business of ``test_gpu_quantile_keepdims.py``.
"""

import pytest

cupy = pytest.importorskip("cupy")

import wrapt

from gpushim.patches.cupy.quantile_keepdims import patch
from tests.cupy import quantile_corpus
from tests.support import applied, gate, record_corpus

GATE = gate(patch)
NOT_ITERABLE = "TypeError: 'int' object is not iterable"
INTEGER_AXES = ("0", "-1", "5")


def cases(axes, keepdims):
    """The corpus cases with an axis named in ``axes`` and a ``keepdims`` in ``keepdims``."""
    wanted = [f" axis={axis} keepdims={kept} " for axis in axes for kept in keepdims]
    return [case for case in quantile_corpus.cases() if any(part in case for part in wanted)]


def unchecked():
    from cupy._statistics import order

    return order._quantile_unchecked


@GATE.affected_only
def test_needed_an_integer_axis_with_keepdims_raises_without_gpushim():
    outcomes = quantile_corpus.run(cases(INTEGER_AXES, [True]))
    assert len(outcomes) == 108
    assert set(outcomes.values()) == {NOT_ITERABLE}


@GATE.affected_only
def test_needed_a_bool_axis_with_keepdims_raises_without_gpushim():
    outcomes = quantile_corpus.run(cases(["True"], [True]))
    assert set(outcomes.values()) == {"TypeError: 'bool' object is not iterable"}


@GATE.affected_only
def test_effective_an_integer_or_bool_axis_with_keepdims_reaches_the_device(this_patch):
    outcomes = quantile_corpus.run(cases([*INTEGER_AXES, "True"], [True]))
    assert not [case for case, outcome in outcomes.items() if outcome.startswith("TypeError")]


@GATE.affected_only
def test_effective_other_calls_are_the_release_s():
    others = cases(["none", "(0,)", "(0, -1)", "numpy.int64(0)"], [False, True])
    others += cases([*INTEGER_AXES, "True"], [False])
    released = quantile_corpus.run(others)
    with applied(patch):
        assert quantile_corpus.run(others) == released


@GATE.affected_only
def test_effective_a_call_that_does_not_bind_is_refused_by_the_release(this_patch):
    with pytest.raises(TypeError) as patched:
        unchecked()(None, None, axis=0, axes=1)
    with pytest.raises(TypeError) as released:
        unchecked().__wrapped__(None, None, axis=0, axes=1)
    assert str(patched.value) == str(released.value)


@GATE.unaffected_only
def test_harmless_not_affected_and_the_function_is_cupys_own(gpushim_patched):
    state = next(r for r in gpushim_patched.status() if r["id"] == patch.id)["state"]
    assert state == "not-affected"
    assert not isinstance(unchecked(), wrapt.ObjectProxy)
    assert unchecked().__module__ == "cupy._statistics.order"


@GATE.recorded_only
def test_faithful_outcomes_of_the_corpus():
    """Patched old releases record what unpatched 13.4.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, quantile_corpus.run)
    assert len(outcomes) == len(quantile_corpus.cases()) == 576
    assert NOT_ITERABLE not in outcomes.values()
