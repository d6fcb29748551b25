"""cupy.asarray_blocking: ``cupy.array``/``asarray``/``asanyarray(..., blocking=True)`` of host data (cupy/cupy#9271).

On 13.5.0 and 13.5.1 every such call raises ``UnboundLocalError`` before
anything is copied; with gpushim it takes 13.6.0's path, a copy to the device,
and never the path that skips the copy.  Without a device the copy stops at
its first call to the driver, after the result was allocated (see
``host_copies``); that the copy finishes, holds the values and leaves the
caller's host memory alone is the business of ``test_gpu_asarray_blocking.py``.
"""

import pytest

cupy = pytest.importorskip("cupy")

from gpushim.patches.cupy.asarray_blocking import patch
from tests.cupy import host_copies
from tests.gpu import pretend_a_device
from tests.support import applied, gate, record_faithful

GATE = gate(patch)

UNBOUND = "UnboundLocalError: local variable 'a' referenced before assignment"
# Inputs the release hands to _array_default (host data), and those it does not.
NOT_HOST_DATA = ("cupy array", "list of numpy arrays")
HOST_DATA = [case for case, (source, _, _) in host_copies.cases(blocking=[True]).items() if source not in NOT_HOST_DATA]
NOT_HOST_DATA_CASES = [case for case in host_copies.cases(blocking=[True]) if case not in HOST_DATA]
NOT_BLOCKING = list(host_copies.cases(blocking=[False]))


def core():
    from cupy import _core

    return _core


@GATE.affected_only
def test_needed_host_data_raises_unboundlocalerror_before_any_allocation_without_gpushim():
    outcomes = host_copies.run(HOST_DATA)
    assert len(outcomes) >= 150
    assert all(outcome["allocated"] == [] and outcome["outcome"] == UNBOUND for outcome in outcomes.values()), outcomes


@GATE.affected_only
def test_effective_host_data_is_copied_to_a_new_device_array(this_patch):
    outcomes = host_copies.run(HOST_DATA)
    assert not [case for case, outcome in outcomes.items() if outcome["outcome"].startswith("UnboundLocalError")]
    copied = outcomes["asarray blocking=True of float64 C"]
    assert copied["allocated"] == [48], "the copy's device array of 2 x 3 float64"
    assert outcomes["array copy=False blocking=True of float32"]["allocated"] == [24]


@GATE.affected_only
@pytest.mark.parametrize("cases", [NOT_BLOCKING, NOT_HOST_DATA_CASES], ids=["blocking=False", "not host data"])
def test_effective_calls_the_release_can_finish_are_left_to_it(cases):
    released = host_copies.run(cases)
    with applied(patch):
        assert host_copies.run(cases) == released


@GATE.affected_only
@pytest.mark.parametrize("blocking", [True, False])
def test_effective_an_unboundlocalerror_from_elsewhere_is_raised_as_it_is(blocking, this_patch):
    class Broken:
        asked = 0

        def __array__(self, dtype=None, copy=None):
            Broken.asked += 1
            raise UnboundLocalError("raised by the caller's object")

    with pytest.raises(UnboundLocalError, match="raised by the caller's object"):
        cupy.array(Broken(), blocking=blocking)
    assert Broken.asked == 1


@GATE.recorded_only
def test_faithful_conversions_of_the_corpus(gpushim_patched):
    """Patched 13.5.x records what unpatched 13.6.0 records; the matrix compares the files."""
    outcomes = host_copies.run(list(host_copies.cases()))
    assert len(outcomes) == 378
    assert not [case for case, outcome in outcomes.items() if outcome["outcome"] == UNBOUND]
    record_faithful(patch, outcomes)


@pytest.mark.parametrize("on_a_device", [False, True], ids=["no device", "a device"])
def test_the_probe_finds_no_bug_where_the_release_has_no_blocking_keyword(monkeypatch, on_a_device):
    """12.x's ``asarray(a, dtype=None, order=None)`` raises TypeError for ``blocking``: a bug it cannot have."""
    if on_a_device:
        pretend_a_device(monkeypatch)

    def asarray(a, dtype=None, order=None):
        raise AssertionError("the probe calls a release that has no blocking keyword")

    monkeypatch.setattr(cupy, "asarray", asarray)
    assert patch.probe() is None
