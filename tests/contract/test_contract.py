"""What every patch must do, checked for each patch whose target this matrix cell installs.

The checks are :class:`gpushim.testing.Contract`'s, the same that a
distribution adding patches runs on its own; the state each patch must
reach is derived from its declaration and the cell's installed releases.
A patch's probe is asked in the cells at its range's ends and in those next
to them; in the others its checks that need no probe run.
"""

from __future__ import annotations

import functools

import pytest

import gpushim
from gpushim.states import APPLIED
from gpushim.testing import GPUSHIM_FIRST, WITHOUT, Contract, installed_ids
from tests.gpu import on_gpu
from tests.support import probed_releases

if not installed_ids():
    pytest.skip("no target of any patch is installed", allow_module_level=True)


class TestContract(Contract):
    def instances(self, id):
        """A Warp CPU array, through which Warp's array methods are read as bound methods; no GPU is used."""
        if gpushim.registry().library(id).target != "warp":
            return {}
        import warp

        warp.config.quiet = True
        warp.init()  # Warp up to 1.2 makes no array before init
        array = warp.zeros(3, dtype=warp.float32, device="cpu")
        return {type(array): array}

    def unprobed_because(self, id):
        return unprobed_because(id)

    @on_gpu
    def test_on_a_device_the_probes_give_the_same_verdicts(self, id, expected):
        """Where a device is present the probes use its memory (``gpushim.device``): needed and effective still hold.

        The contract's checks ask the same probes on any machine; this one is
        marked ``gpu`` so that the GPU session (``nox -t gpu``), which runs the
        marked tests only, asks them on the device as well.
        """
        bug, _ = self.probe(id, WITHOUT)
        assert (bug is not None) == (expected == APPLIED), bug
        assert self.probe(id, GPUSHIM_FIRST) == (None, expected)


@functools.lru_cache(maxsize=None)
def unprobed_because(id: str) -> str:
    """The probes are asked in the cells at their range's ends and next to them (:func:`probed_releases`)."""
    record = gpushim.record(id)
    distribution, installed = record["distribution"], record["installed_version"]
    if installed is None or installed in probed_releases(gpushim.registry()[id], distribution, installed):
        return ""
    return (
        f"{distribution} {installed} is neither an end of the range of {id} nor next to one: the cells that are ask its"
        " probe"
    )
