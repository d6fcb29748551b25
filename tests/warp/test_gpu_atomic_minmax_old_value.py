"""warp.atomic_minmax_old_value on a CUDA device, the only place the bug shows.

The CPU corpus (``atomic_minmax_corpus``) with every array on ``cuda:0``:
the released float loops return the value they stored where they store one
(``atomic_min`` of 1.0 on 2.0 gives 1.0, ``atomic_max`` of 3.0 gives 3.0),
and of 256 threads taking the minimum of distinct values into one slot, the
one that stores last gets its own value back; patched, and on 1.11.0 and
later, every call returns the old value, as on the CPU.  Without a device
these tests are skipped with "no CUDA device" (tests/gpu.py), and none of
them has run yet.
"""

from gpushim.patches.warp.atomic_minmax_old_value import patch
from tests.gpu import on_gpu
from tests.support import applied, gate

GATE = gate(patch)

from tests.warp import atomic_minmax_corpus as corpus  # noqa: E402

OWN = "threads that got their own value back (min, max)"


@on_gpu
@GATE.affected_only
def test_needed_float_atomic_min_and_max_return_the_stored_value_on_the_device_without_gpushim():
    outcomes = corpus.run_corpus("cuda:0")
    # atomic_min(lows, 0, 1.0) and atomic_max(highs, 1, 3.0), each on 2.0: the first call of each case
    assert (outcomes["returned for (2.0, 1.0)"][0], outcomes["returned for (2.0, 3.0)"][1]) == (1.0, 3.0)
    assert 0 not in outcomes[OWN]
    stored = [name for name in corpus.FIXED if name.endswith("after")]
    assert [outcomes[name] for name in stored] == [corpus.FIXED[name] for name in stored]  # what they store is right


@on_gpu
@GATE.affected_only
def test_effective_every_call_returns_the_old_value_on_the_device_with_gpushim():
    with applied(patch):
        assert corpus.run_corpus("cuda:0") == corpus.FIXED


@on_gpu
@GATE.unaffected_only
def test_the_fixed_release_returns_the_old_value_on_the_device():
    assert corpus.run_corpus("cuda:0") == corpus.FIXED
