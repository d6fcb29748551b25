"""The probes of both ``cupy.fuse`` patches where a device is present: they trace on CuPy's own memory.

Without a device a probe sets an allocator of memory nobody touches; with one it must leave CuPy's
memory pool in place.  These tests run on the CPU and take the probes' device branch by pretending a
driver (tests/gpu.py): an allocator that hands out untouched memory stands in for the pool CuPy
would use on a device.
"""

from __future__ import annotations

import pytest

from gpushim.patches.cupy import fuse_inf_nan, fuse_python_scalar
from tests.gpu import pretend_a_device
from tests.support import gate

PATCHES = [fuse_inf_nan.patch, fuse_python_scalar.patch]
AFFECTED = {patch.id: gate(patch).affected for patch in PATCHES}  # fuse_python_scalar: the release and NumPy 2


@pytest.mark.parametrize("patch", PATCHES, ids=lambda patch: patch.id)
def test_probe_keeps_cupys_allocator_where_a_device_is_present(monkeypatch, patch):
    import cupy

    from tests.cupy.fusion_tracing import untouched_allocator

    pretend_a_device(monkeypatch)
    with untouched_allocator() as device_pool:
        verdict = patch.probe()
        assert cupy.cuda.get_allocator() is device_pool
    assert (verdict is not None) == AFFECTED[patch.id]
