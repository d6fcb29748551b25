"""``warp.sparse.bsr_get_diag(A, out=...)`` keeps stale values in ``out`` (Warp 1.x up to 1.11.0).

What breaks.  ``bsr_get_diag`` launches a kernel that writes the diagonal
block of each row that has one and leaves the other rows alone.  Without
``out`` it fills a fresh ``wp.zeros`` array, so those rows read 0; with
``out`` they keep whatever the caller's buffer held, and so does anything
past the first ``min(nrow, ncol)`` entries (measured: rows without a
diagonal block read the 7 left in ``out`` on 1.11.0, 0 on 1.11.1).  Nothing
raises.  Every 1.x release up to 1.11.0 does this.

Fixed upstream.  NVIDIA/warp GH-1170, fixed by NVIDIA/warp@28e724758 (1.11.1;
3d8dc3b6c on main, in 1.12.0), which zeroes ``out`` once it has been
validated, before the launch.

How the fix works.  The backport wraps ``bsr_get_diag`` and zeroes ``out``
with ``out.zero_()`` before Warp's own function runs, but only when Warp's
own checks of ``out`` (dtype, device, length) will pass, so that a call Warp
rejects leaves the caller's buffer untouched, as in 1.11.1, and raises
Warp's own error.  The checks are the installed release's: 1.9.0 moved the
dtype comparison from ``!=`` to ``types_equal``, and 1.4.0 began to accept
matrix expressions such as ``2.0 * A``, unwrapped with
``_extract_matrix_and_scale``; the patch reads which of these names the
function uses.  Without ``out`` the wrapper adds one binding of the call and
one comparison.

The function lives in ``warp/sparse.py`` up to 1.9 and ``warp/_src/sparse.py``
from 1.10, where ``warp.sparse`` re-exports it; the patch waits for
``warp.sparse`` (which ``import warp`` loads only from 1.10) and wraps the
function under both names.  Warp's own callers never pass ``out``.

Not backported.  1.11.1's other changes.

The probe.  The diagonal of a 2 x 2 matrix with one diagonal block, read
into an ``out`` filled with 7: the row without a diagonal block must read 0.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, TargetMismatch, expect

patch = Patch(
    id="warp.bsr_get_diag_out",
    affected="<1.11.1",
    fixed_in="1.11.1",
    issue="NVIDIA/warp GH-1170",
    fix="NVIDIA/warp@28e724758 (3d8dc3b6c on main)",
    summary="bsr_get_diag(A, out=...) leaves stale values in the rows of out that have no diagonal block.",
    module="warp.sparse",
)


_BSR_GET_DIAG = Parameters("A", out=None)


def _unscaled(matrix):
    """What ``bsr_get_diag`` works on before 1.4.0: the matrix it is given, unscaled."""
    return matrix, None


def _not_different(dtype, other):
    """The dtype check before 1.9.0: ``out.dtype != A.values.dtype`` raises."""
    return not (dtype != other)


@patch.applier
def _apply(sparse, journal):
    import sys
    import types

    get_diag = expect(sparse, "bsr_get_diag", types.FunctionType)
    _BSR_GET_DIAG.check(get_diag)
    source = sys.modules.get(get_diag.__module__)
    names = get_diag.__code__.co_names
    extract = getattr(source, "_extract_matrix_and_scale", None) if "_extract_matrix_and_scale" in names else _unscaled
    same_dtype = getattr(source, "types_equal", None) if "types_equal" in names else _not_different
    if not callable(extract) or not callable(same_dtype):
        raise TargetMismatch(f"{get_diag.__module__} lacks a helper its bsr_get_diag names")

    def accepted(A, out):
        """Whether Warp's own checks of ``out`` pass for this call."""
        try:
            matrix = extract(A)[0]
            values = matrix.values
            return bool(
                same_dtype(out.dtype, values.dtype)
                and not (out.device != values.device)
                and not (out.shape[0] < min(matrix.nrow, matrix.ncol))
            )
        except Exception:
            return False

    def bsr_get_diag(wrapped, instance, args, kwargs):
        try:
            A, out = _BSR_GET_DIAG.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
        if out is not None and accepted(A, out):
            out.zero_()
        return wrapped(*args, **kwargs)

    owners = [sparse] if source is None or source is sparse else [sparse, source]
    journal.wrap(owners, "bsr_get_diag", bsr_get_diag)


@patch.prober
def _probe():
    """The diagonal of [[0, 1], [2, 3]] read into an ``out`` full of 7 must be [0, 3]."""
    import warp
    import warp.sparse

    warp.config.quiet = True
    warp.init()
    matrix = warp.sparse.bsr_zeros(2, 2, warp.float32, device="cpu")
    warp.sparse.bsr_set_from_triplets(
        matrix,
        warp.array([0, 1, 1], dtype=int, device="cpu"),
        warp.array([1, 0, 1], dtype=int, device="cpu"),
        warp.array([1.0, 2.0, 3.0], dtype=warp.float32, device="cpu"),
    )
    out = warp.full(2, 7.0, dtype=warp.float32, device="cpu")
    diagonal = warp.sparse.bsr_get_diag(matrix, out=out).numpy().tolist()
    if diagonal != [0.0, 3.0]:
        return f"bsr_get_diag(A, out=...) of [[0, 1], [2, 3]] into an out full of 7 gives {diagonal}, not [0.0, 3.0]"
    return None
