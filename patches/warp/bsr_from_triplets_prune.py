"""``bsr_set_from_triplets(..., prune_numerical_zeros=False)`` drops zero blocks all the same (Warp 1.8.0).

What breaks.  1.8.0 moved the accumulation of triplet values to Python
(NVIDIA/warp@6c7658673) and now hands the native topology builders
(``bsr_matrix_from_triplets_host`` and ``_device``) a mask of the bits that
make a value nonzero, taken from ``warp.sparse._zero_value_masks`` for the
matrix's scalar type: a block whose values are all zero under the mask is
left out, and a mask of 0 keeps every block.  The mask is passed whatever
``prune_numerical_zeros`` says, so three zero-valued triplets give a matrix
with ``nnz == 0`` instead of 3, through ``bsr_set_from_triplets`` and
``bsr_from_triplets`` alike.  1.7.2 passed the flag itself and was right.

Fixed upstream.  NVIDIA/warp GH-832, fixed by NVIDIA/warp@ec8ef9857 (1.8.1),
which passes a mask of 0 when the flag is False.  Checked: ``git tag
--contains`` gives v1.8.0 for 6c7658673 and v1.8.1 for ec8ef9857; 1.7.2 and
1.8.1 keep the three blocks, 1.8.0 keeps none.

How the fix works.  The backport puts in place of ``_zero_value_masks`` a
dictionary with the same items whose ``get`` answers Warp's default, 0, while
a call of ``bsr_set_from_triplets`` that asked not to prune is running in the
same thread or task (a context variable); ``bsr_set_from_triplets`` is
wrapped to set it, binding the call as Warp binds it.  All else is Warp's
code, so the checks, their messages and the matrices are 1.8.1's, on the CPU
and on CUDA devices, since both builders receive the mask.
``bsr_from_triplets`` calls the module's ``bsr_set_from_triplets`` and is
fixed with it; a reference to the function taken before the patch was
applied (``from warp.sparse import bsr_set_from_triplets`` before ``import
gpushim.auto`` where ``warp.sparse`` was imported first) still reaches the
mask, but does not set the variable and still prunes.

Not backported.  The same commit also makes
``bsr_matrix_from_triplets_device`` copy the sorted block indices with
``cudaMemcpyAsync`` on the launch stream instead of a blocking
``cudaMemcpy`` (when the summed blocks are returned and the sort left them
in its second buffer).  That is native code that Python cannot reach: on
1.8.0 that copy still blocks the host and ignores the stream, which matters
inside CUDA graph capture.  Values and topology are not affected by it.

The probe.  A 4 x 4 matrix filled from three zero-valued triplets with
``prune_numerical_zeros=False`` on the CPU, which must keep three blocks.
"""

from __future__ import annotations

import contextvars

from gpushim import Parameters, Patch, TargetMismatch, expect, expect_lines

patch = Patch(
    id="warp.bsr_from_triplets_prune",
    affected=">=1.8.0,<1.8.1",
    fixed_in="1.8.1",
    issue="NVIDIA/warp GH-832",
    fix="NVIDIA/warp@ec8ef9857",
    summary="bsr_set_from_triplets and bsr_from_triplets drop zero blocks even with prune_numerical_zeros=False.",
    module="warp.sparse",
)

_keeping_zeros = contextvars.ContextVar("gpushim_warp_bsr_keeping_zeros", default=False)


class _ZeroValueMasks(dict):
    """``_zero_value_masks``, answering no mask (Warp's default, 0) while zero blocks are to be kept.

    A copy of Warp's dictionary, which Warp never changes, keeping it as ``__wrapped__``.
    """

    def __init__(self, masks: dict) -> None:
        super().__init__(masks)
        self.__wrapped__ = masks

    def get(self, key, default=None):
        if _keeping_zeros.get():
            return default
        return super().get(key, default)


_SET_FROM_TRIPLETS = Parameters(
    "dest", "rows", "columns", values=None, count=None, prune_numerical_zeros=True, masked=False
)


def _set_from_triplets(wrapped, instance, args, kwargs):
    try:
        dest, rows, columns, values, count, prune, masked = _SET_FROM_TRIPLETS.bind(*args, **kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
    token = _keeping_zeros.set(not prune)
    try:
        return wrapped(*args, **kwargs)
    finally:
        _keeping_zeros.reset(token)


@patch.applier
def _apply(sparse, journal):
    masks = expect(sparse, "_zero_value_masks", dict)
    if type(masks) is not dict:
        raise TargetMismatch("warp.sparse._zero_value_masks is not a plain dict")
    function = expect(sparse, "bsr_set_from_triplets", callable)
    _SET_FROM_TRIPLETS.check(function)
    expect_lines(function, "zero_value_mask = _zero_value_masks.get(scalar_type, 0)")
    journal.replace(sparse, "_zero_value_masks", _ZeroValueMasks(masks))
    journal.wrap(sparse, "bsr_set_from_triplets", _set_from_triplets)


@patch.prober
def _probe():
    """Three zero-valued triplets with ``prune_numerical_zeros=False`` must give three blocks.

    Releases whose ``bsr_set_from_triplets`` has no such flag (before 1.3.0) have nothing to show.
    """
    import inspect

    import warp
    import warp.sparse

    if "prune_numerical_zeros" not in inspect.signature(warp.sparse.bsr_set_from_triplets).parameters:
        return None
    warp.config.quiet = True
    warp.init()
    matrix = warp.sparse.bsr_zeros(4, 4, warp.float32, device="cpu")
    rows = warp.array([1, 0, 2], dtype=int, device="cpu")
    columns = warp.array([0, 1, 2], dtype=int, device="cpu")
    values = warp.zeros(3, dtype=float, device="cpu")
    warp.sparse.bsr_set_from_triplets(matrix, rows, columns, values, prune_numerical_zeros=False)
    nnz = matrix.nnz_sync()
    if nnz != 3:
        return f"bsr_set_from_triplets(..., prune_numerical_zeros=False) of three zero blocks gives nnz = {nnz}, not 3"
    return None
