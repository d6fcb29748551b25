"""Warp 1.3.0 to 1.3.2 forget the source of an array that aliases it, which can then be freed under it.

What breaks.  ``wp.array(numpy_array, device="cpu", copy=False)`` points the
Warp array at the NumPy buffer and keeps the NumPy array in ``_ref`` so that
the buffer outlives the Warp array; an array made from a
``__cuda_array_interface__`` on a CUDA device keeps its source the same way.
Warp 1.3.0 (NVIDIA/warp@d2be8ea, "Array Overwrite Notifications") added
``self._ref = None`` at the end of ``array.__init__``, after
``_init_from_data`` has stored the source there, so both kinds of array lose
their reference as soon as it is made.  When the caller drops the source, its
memory is freed while the Warp array still points at it: kernels and
``.numpy()`` then read and write freed memory, silently.  1.2.x has no such
line.

Fixed upstream.  NVIDIA/warp@b0a9baa ("Fix reference to source data being
erased in array.__init__", in 1.3.3, whose changelog names the aliasing issue)
clears ``_ref`` at the start of ``__init__`` instead; 1.3.3 and later are right.

How the fix works.  ``array._init_from_data`` is wrapped to note what it left
in ``_ref`` (the very object 1.3.3 keeps: the source, or the NumPy view of it
that Warp aliased), and ``array.__init__`` is wrapped to put that object back
once the original ``__init__`` has run, so the finished array holds what
1.3.3's holds.  Arrays built any other way (from a pointer, by shape, as
annotations) only pass through the ``__init__`` wrapper, which then finds
nothing noted.

Not backported.  Nothing else in 1.3.3's release.

The probe.  A CPU array aliasing a NumPy array, which is watched with
``weakref.finalize``: the Warp array must keep it alive.
"""

from __future__ import annotations

from gpushim import Patch, expect, expect_reads

patch = Patch(
    id="warp.array_copy_false_reference",
    affected=">=1.3.0,<1.3.3",
    fixed_in="1.3.3",
    issue="Warp 1.3.3 changelog: aliasing issue with zero-copy array initialization from numpy",
    fix="NVIDIA/warp@b0a9baa",
    summary="wp.array(data, copy=False) drops its reference to the source, which can be freed under the array.",
)

# The instance attribute where the _init_from_data wrapper leaves the source for the __init__ wrapper.
_SOURCE_LEFT_BY_INIT_FROM_DATA = "_gpushim_source_ref"


@patch.applier
def _apply(warp, journal):
    array = expect(warp, "types.array", type)
    for name in ("__init__", "_init_from_data"):
        expect(array, name, callable, own=True)
    expect_reads(array.__init__, "_ref")

    def init_from_data(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        reference = getattr(instance, "_ref", None)
        if reference is not None:
            setattr(instance, _SOURCE_LEFT_BY_INIT_FROM_DATA, reference)
        return result

    def init(wrapped, instance, args, kwargs):
        try:
            wrapped(*args, **kwargs)
        finally:
            reference = vars(instance).pop(_SOURCE_LEFT_BY_INIT_FROM_DATA, None)
        if reference is not None and instance._ref is None:
            instance._ref = reference

    journal.wrap(array, "_init_from_data", init_from_data)
    journal.wrap(array, "__init__", init)


@patch.prober
def _probe():
    """A CPU array made with ``copy=False`` from a NumPy array must keep that array alive (nothing is read)."""
    import gc
    import weakref

    import numpy as np
    import warp

    warp.config.quiet = True
    warp.init()  # Warp up to 1.2 makes no array before init
    source = np.arange(8, dtype=np.float32)
    freed = []
    weakref.finalize(source, freed.append, True)
    result = warp.array(source, dtype=warp.float32, device="cpu", copy=False)
    kept = result._ref is source
    del source
    gc.collect()
    if freed or not kept:
        return (
            "wp.array(numpy_array, device='cpu', copy=False) does not keep its source: "
            f"_ref is {type(result._ref).__name__}, and the source was {'freed' if freed else 'kept'} "
            "while the Warp array lived"
        )
    return None
