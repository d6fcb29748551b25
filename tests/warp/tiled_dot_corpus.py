"""TiledDot's dot products over stale scratch, and two iterative solvers, on Warp's CPU device.

The corpus takes dot products with ``TiledDot`` over scratch first filled with
1000, so that the released later passes read a known value where 1.11.0 pads
with zeros, and the unpatched release is wrong every time rather than when
memory held garbage.  Tiles of 512 cover the solvers' case, vectors longer
than 262,144; tiles of 8 give three later passes on vectors of a few hundred
elements, cheaply, and a scratch made longer than the vectors.  It runs
float32 and float64, one and three columns with column offsets, and ``cg``
on a 270,000-row diagonal system (each solver builds modules of its own,
about 20 s cold on the CPU, and all take their dot products from
``TiledDot``: one stands for them).
"""

from __future__ import annotations

import sys

import numpy as np

STALE = 1000.0

# name: (max_length, tile_size, columns, length, col_offset)
DOTS = {
    "307,207, tiles of 512": (307207, 512, 1, 307207, 0),
    "262,145, tiles of 512": (262145, 512, 1, 262145, 0),
    "262,144, tiles of 512": (262144, 512, 1, 262144, 0),
    "1000 of 1000, tiles of 8": (1000, 8, 1, 1000, 0),
    "513 of 1000, tiles of 8": (1000, 8, 1, 513, 0),
    "65 of 1000, tiles of 8": (1000, 8, 1, 65, 0),
    "9 of 1000, tiles of 8": (1000, 8, 1, 9, 0),
    "1 of 1000, tiles of 8": (1000, 8, 1, 1, 0),
    "3 columns of 700, tiles of 8": (1000, 8, 3, 700, 0),
    "3 columns of 700 at offset 1, tiles of 8": (1000, 8, 3, 700, 1),
}


def _warp():
    import warp
    import warp.optim.linear
    import warp.sparse

    warp.config.quiet = True
    warp.init()
    return warp


def warp_and_linear():
    """Warp, initialised quietly, and the module that defines its linear solvers and ``TiledDot``."""
    warp = _warp()
    linear = sys.modules[warp.optim.linear.cg.__module__]
    declare_overloads(warp, linear)
    return warp, linear


def operands(columns, length, dtype):
    """Small integers, so that every partial sum is exact in float32."""
    values = np.arange(columns * length, dtype=dtype).reshape(columns, length) % 7 - 3
    return values, values[:, ::-1].copy()


def exact(columns, length):
    a, b = operands(columns, length, "float64")
    return (a * b).sum(axis=1).tolist()


def tiled_dot(max_length, tile_size, columns, length, col_offset, dtype="float32", device="cpu"):
    """``compute``'s column sums of ``a * b`` over stale scratch, as Python floats."""
    warp, linear = warp_and_linear()
    scalar = getattr(warp, dtype)
    dot = linear.TiledDot(max_length, scalar, tile_size=tile_size, device=device, max_column_count=col_offset + columns)
    dot.partial_sums_a.fill_(STALE)
    dot.partial_sums_b.fill_(STALE)
    a, b = (warp.array(values, dtype=scalar, device=device) for values in operands(columns, length, dtype))
    if columns == 1:
        a, b = a.flatten(), b.flatten()
    dot.compute(a, b, col_offset)
    return dot.cols(columns, col_offset).numpy()[:, 0].tolist()


def solve():
    """Two iterations of ``cg`` on a 270,000-row diagonal system: the iterate's sum and the residual."""
    warp, linear = warp_and_linear()
    rows = warp.array(np.arange(270000, dtype=np.int32), device="cpu")
    diagonal = warp.array(np.linspace(1.0, 2.0, 270000, dtype=np.float32), device="cpu")
    matrix = warp.sparse.bsr_from_triplets(270000, 270000, rows, rows, diagonal)
    b = warp.ones(270000, dtype=warp.float32, device="cpu")
    x = warp.zeros(270000, dtype=warp.float32, device="cpu")
    iterations, residual, _ = linear.cg(matrix, b, x, maxiter=2, tol=1e-12)
    return {"iterations": iterations, "residual": float(residual), "sum": float(x.numpy().astype(np.float64).sum())}


def declare_overloads(warp, linear):
    """Give the dot and sum kernels of every tile size their float32 and float64 overloads before a launch builds them.

    Each new overload makes Warp build the whole linear module again at the next
    launch: declared at once, the corpus's dot products build it once, not
    twice per tile size and type.  From 1.11.0 each ``TiledDot`` makes kernels
    of its own, and this has nothing to declare.
    """
    if not hasattr(linear._create_tiled_dot_kernels, "cache_info"):
        return
    for tile_size in {case[1] for case in DOTS.values()}:
        dot, total = linear._create_tiled_dot_kernels(tile_size)
        for scalar in (warp.float32, warp.float64):
            dot.add_overload([warp.array2d(dtype=scalar)] * 3)
            total.add_overload([warp.array2d(dtype=scalar)] * 2)


def run_corpus():
    outcomes = {}
    for name, case in DOTS.items():
        for dtype in ("float32", "float64"):
            outcomes[f"{name}, {dtype}"] = tiled_dot(*case, dtype=dtype)
    outcomes["cg"] = solve()
    return outcomes
