"""``TiledDot`` sums stale scratch past the valid length in its later passes (Warp 1.9.0 to 1.10.1).

What breaks.  The iterative solvers of ``warp.optim.linear`` (``cg``,
``cr``, ``bicgstab``, ``gmres``) take their dot products with ``TiledDot``: a
first pass reduces each tile of 512 products to one partial sum in a scratch
array as wide as the longest vector's block count, and every further pass
reduces tiles of those partial sums, ping-ponging between the two halves of
the scratch.  Each later pass loads its input through the full width of the
scratch, so a tile load that should be zero-padded past the previous pass's
output reads whatever the scratch held there instead: uninitialised memory,
or partial sums of an earlier pass.  The solvers make the scratch for their
own vectors, so where one later pass suffices (up to 512 x 512 = 262,144
elements) the load ends at the scratch's edge and pads correctly; longer
vectors get wrong dot products and the solvers wrong or NaN iterates, without
an error.  ``TiledDot`` first ships in 1.9.0 (1.8.1 has none) and its code is
the same through 1.10.1 (``warp/optim/linear.py``, then
``warp/_src/optim/linear.py``, which ``warp.optim.linear`` re-exports; the
patch waits for the one the release has).

Fixed upstream.  NVIDIA/warp@278197355 (``git tag --contains``: v1.11.0
first; in its changelog as the zero-padding of tiled reductions) hands each
later pass a view of its input cut to the valid length, so the tile load pads
with zeros.

How the fix works.  The fix is in the launch, not in the kernels: the wrapper
runs ``compute``'s launches itself, the same recorded ``dot_launch`` and
``sum_launch`` over the same scratch views, dims and rounds as released, with
each later pass's input cut to the previous pass's output length as in
1.11.0.  A view of a 2-d array is still a 2-d array of the same dtype, so the
same compiled kernel runs: no kernel source changes, Warp's module hash is
the same patched and unpatched, and a kernel cache directory shared between
patched and unpatched processes holds one build that serves both.
``TiledDot`` objects made before the patch was applied are fixed too, since
``compute`` is looked up on the class.

Not backported.  Nothing; the fix commit's only other change is its
changelog line.

The probe.  The dot product of two vectors of 307,207 ones with scratch first
filled with 1000, which must give 307,207; releases without ``TiledDot`` have
nothing to show.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect, expect_reads

patch = Patch(
    id="warp.tiled_dot_padding",
    affected=">=1.9.0,<1.11.0",
    fixed_in="1.11.0",
    issue="NVIDIA/warp 1.11.0 changelog: zero-padding of tiled reductions in iterative linear solvers",
    fix="NVIDIA/warp@278197355",
    summary="TiledDot (cg, cr, bicgstab, gmres) sums stale scratch past the valid length for vectors over 262,144.",
    module=("warp._src.optim.linear", "warp.optim.linear"),
)

# What compute reads of its TiledDot; another shape is a TargetMismatch.
_NAMES = ("_as_scalar_array", "dot_launch", "sum_launch", "partial_sums_a", "partial_sums_b", "rounds", "tile_size")


_COMPUTE = Parameters("a", "b", col_offset=0)  # after self


def _as_rows(array):
    return array.reshape((1, -1)) if array.ndim == 1 else array


@patch.applier
def _apply(linear, journal):
    import sys
    import types

    source = sys.modules.get(expect(linear, "cg.__module__", str))
    tiled_dot = expect(source, "TiledDot", type)
    compute = expect(tiled_dot, "compute", types.FunctionType, own=True)
    _COMPUTE.check(compute, method=True)
    expect_reads(compute, *_NAMES)
    as_scalar_array = expect(source, "_as_scalar_array", callable)

    def compute_padded(wrapped, instance, args, kwargs):
        try:
            a, b, col_offset = _COMPUTE.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
        a = _as_rows(as_scalar_array(a))
        b = _as_rows(as_scalar_array(b))
        columns = slice(col_offset, col_offset + a.shape[0])
        tile = instance.tile_size
        length = a.shape[1]
        data_out, data_in = instance.partial_sums_a[columns], instance.partial_sums_b[columns]
        launch = instance.dot_launch
        launch.set_param_at_index(0, a)
        launch.set_param_at_index(1, b)
        launch.set_param_at_index(2, data_out)
        launch.set_dim((a.shape[0], (length + tile - 1) // tile, tile))
        launch.launch()
        for _round in range(instance.rounds):
            length = (length + tile - 1) // tile
            data_in, data_out = data_out, data_in
            launch = instance.sum_launch
            launch.set_param_at_index(0, data_in[:, :length])
            launch.set_param_at_index(1, data_out)
            launch.set_dim((a.shape[0], (length + tile - 1) // tile, tile))
            launch.launch()
        return data_out

    journal.wrap(tiled_dot, "compute", compute_padded)


@patch.prober
def _probe():
    """The dot product of 307,207 ones with themselves, over scratch filled with 1000, is 307,207."""
    import sys

    import warp
    import warp.optim.linear

    warp.config.quiet = True
    warp.init()
    tiled_dot_type = getattr(sys.modules[warp.optim.linear.cg.__module__], "TiledDot", None)
    if tiled_dot_type is None:
        return None  # before 1.9.0 the solvers reduce without it
    tiled_dot = tiled_dot_type(307207, warp.float32, device="cpu")
    tiled_dot.partial_sums_a.fill_(1000.0)
    tiled_dot.partial_sums_b.fill_(1000.0)
    ones = warp.ones(307207, dtype=warp.float32, device="cpu")
    tiled_dot.compute(ones, ones)
    result = float(tiled_dot.col(0).numpy()[0])
    if result != 307207.0:
        return f"TiledDot gives {result} for the dot product of 307,207 ones with themselves, not 307207.0"
    return None
