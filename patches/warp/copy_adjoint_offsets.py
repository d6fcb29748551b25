"""The gradient of ``wp.copy`` reads and writes the wrong ranges when its offsets differ (Warp 1.x before 1.15.0).

What breaks.  ``wp.copy(dest, src, dest_offset, src_offset, count)`` records
``adj_copy`` on the tape, which copies ``dest``'s gradient back into
``src``'s with the forward's offsets as they are: it reads ``dest.grad``
from ``src_offset`` and writes ``src.grad`` from ``dest_offset``, where the
forward read ``src`` from ``src_offset`` and wrote ``dest`` from
``dest_offset``.  Copying two elements of ``[0, 1, 2, 3]`` from 1 to 2 and
seeding ``dest.grad`` with ``[1, 2, 3, 4]`` gives ``src.grad = [0, 0, 2,
3]`` instead of ``[0, 3, 4, 0]``; nothing raises, and ``Tape.backward``
gives gradients of the wrong elements, or raises for a range past an end
when the arrays differ in size.  Equal offsets are unaffected.  The offsets
reach ``adj_copy`` from 1.2.0 (NVIDIA/warp@42cdb3500); 1.1.x, the first
releases with ``adj_copy``, copy the whole gradient (run: 1.1.0 gives ``[1,
2, 3, 4]``, 1.2.0 and 1.14.0 ``[0, 0, 2, 3]``, 1.15.0 ``[0, 3, 4, 0]``).

Fixed upstream.  NVIDIA/warp GH-1533, fixed by NVIDIA/warp@05b9d2a42 (``git
tag --contains``: v1.15.0 first), which swaps the two offsets in
``adj_copy``'s call to ``copy``.  The commit changes
``warp/_src/context.py`` only.

How the fix works.  ``adj_copy`` is wrapped in the module that defines it
(``warp.context`` up to 1.9, ``warp._src.context`` from 1.10): the tape's
records call it by that module's global name when ``Tape.backward`` runs,
so copies recorded before the patch was applied are fixed too.  The wrapper
binds the call as ``adj_copy`` binds it and hands the release's function
``src_offset`` as ``dest_offset`` and ``dest_offset`` as ``src_offset``, so
that Warp's own ``copy`` reads the adjoint of ``dest`` from where the
forward wrote and writes the adjoint of ``src`` where it read.  The ranged
copies between non-contiguous arrays that warp.copy_strided_offsets takes
over record their gradient without ``adj_copy``, already swapped.  Nothing
here is compiled into kernels; Warp's module hashes and kernel cache are
unaffected.

Not backported.  1.15.0's tests.  Releases 1.0.x and 1.1.x, where the
gradient of such a copy is wrong too, each in a way of its own: 1.0.x
records no gradient of ``wp.copy`` on the tape (run: 1.0.0 and 1.0.2 give
``src.grad = [0, 0, 0, 0]``), 1.1.x has ``adj_copy`` without offsets and
copies the whole gradient; 1.2.0 fixed that first.  Mending them would
backport 1.2.0's recording as well, so status says ``not-backported``
there.

The probe.  That copy on the CPU under a tape, whose backward must give
``src.grad = [0, 3, 4, 0]``.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="warp.copy_adjoint_offsets",
    affected=">=1.2.0,<1.15.0",
    fixed_in="1.15.0",
    issue="NVIDIA/warp GH-1533",
    fix="NVIDIA/warp@05b9d2a42",
    not_backported={">=1.0.0,<1.2.0": "Warp 1.1 records the copy's gradient without offsets, 1.0 not at all"},
    summary="The gradient of wp.copy reads dest's adjoint from src_offset and writes src's at dest_offset.",
)

_ADJ_COPY = Parameters("adj_dest", "adj_src", "dest_offset", "src_offset", "count", stream=None)


def _adj_copy(wrapped, instance, args, kwargs):
    try:
        adj_dest, adj_src, dest_offset, src_offset, count, stream = _ADJ_COPY.bind(*args, **kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
    return wrapped(adj_dest, adj_src, dest_offset=src_offset, src_offset=dest_offset, count=count, stream=stream)


@patch.applier
def _apply(warp, journal):
    import sys
    import types

    context = sys.modules.get(expect(warp, "copy.__module__", str))
    _ADJ_COPY.check(expect(context, "adj_copy", types.FunctionType))
    journal.wrap(context, "adj_copy", _adj_copy)


@patch.prober
def _probe():
    """Two elements of [0, 1, 2, 3] copied from 1 to 2 under a tape, dest's gradient seeded with [1, 2, 3, 4]."""
    import numpy as np
    import warp

    warp.config.quiet = True
    warp.init()
    src = warp.array(np.arange(4, dtype=np.float32), device="cpu", requires_grad=True)
    dst = warp.zeros(4, dtype=warp.float32, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.copy(dst, src, dest_offset=2, src_offset=1, count=2)
    tape.backward(grads={dst: warp.array(np.arange(1, 5, dtype=np.float32), device="cpu")})
    result = src.grad.numpy().tolist()
    if result != [0.0, 3.0, 4.0, 0.0]:
        return (
            "the gradient of wp.copy(dst, src, dest_offset=2, src_offset=1, count=2) seeded with [1, 2, 3, 4] "
            f"gives src.grad = {result}, not [0.0, 3.0, 4.0, 0.0]"
        )
    return None
