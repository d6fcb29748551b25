"""A patch's Warp builds are keyed on gpushim's version, and an overlay's on its own text.

Warp names a build, in memory and in its kernel cache, by a hash of the
kernels' source; the patches of its code generator salt that hash
(``key_builds_apart``), so that a gpushim whose patch generates other code
for the same source never gets an older gpushim's build from a shared cache.
Shown with warp.range_reverse_step, an overlay, on one kernel that loops:
the hash Warp computes for its module (``Module.hash_module``, which builds
nothing) with the patch applied, again after a change of gpushim's version
or of the overlay's code.  It is the kit's, not the patch's, so it runs on
the ends of that patch's range only.
"""

import pytest

import gpushim
from gpushim.patches.warp import range_reverse_step
from tests.support import applied, gate

GATE = gate(range_reverse_step.patch)
pytestmark = GATE.ends_only

import warp  # noqa: E402

warp.config.quiet = True


@warp.kernel
def loop(out: warp.array(dtype=float)):
    for i in range(3):
        out[i] = float(i)


def patched_hash() -> bytes:
    """Warp's hash of this file's module, the patch applied anew."""
    with applied(range_reverse_step.patch):
        return loop.module.hash_module()


@pytest.fixture
def first_hash() -> bytes:
    """The hash, the same each time the patch is applied as it is."""
    found = patched_hash()
    assert patched_hash() == found
    return found


def test_a_build_is_keyed_on_gpushims_version(first_hash, monkeypatch):
    monkeypatch.setattr(gpushim, "__version__", f"{gpushim.__version__}.post1")
    assert patched_hash() != first_hash


def test_an_overlays_build_is_keyed_on_its_code(first_hash, monkeypatch):
    monkeypatch.setattr(range_reverse_step, "_CODE", range_reverse_step._CODE + "// another gpushim's\n")
    assert patched_hash() != first_hash
