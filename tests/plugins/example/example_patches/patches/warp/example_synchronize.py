"""A patch for a library gpushim already knows, made up for gpushim's tests: ``warp.synchronize()`` returns ``0``.

The fix makes it return ``None``, as documented; the probe calls it.  Warp's
target and distributions are gpushim's, so this folder's ``__init__`` states
none.
"""

from gpushim import Patch

patch = Patch(
    id="warp.example_synchronize",
    affected=">=1.0,<1.1",
    fixed_in="1.1",
    issue="example/warp#1",
    fix="example/warp#2",
    summary="warp.synchronize() returns 0 instead of None.",
)


def _return_none(wrapped, instance, args, kwargs):
    wrapped(*args, **kwargs)


@patch.applier
def _apply(module, journal):
    journal.wrap(module, "synchronize", _return_none)


@patch.prober
def _probe():
    import warp

    result = warp.synchronize()
    return None if result is None else f"warp.synchronize() returned {result!r}"
