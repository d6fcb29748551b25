"""The old values ``wp.atomic_min`` and ``wp.atomic_max`` return, on a device of choice (warp.atomic_minmax_old_value).

One thread applies each case to a float array of every dimension, a vector,
a matrix and an int array (the control), and records what each call returned
and what the array holds after it; then 256 threads take the minimum and the
maximum of distinct values into one slot, and the corpus counts the threads
that got their own value back, which none can where the old value is
returned.  The CPU build returns the old value on every release; a CUDA
device before 1.11.0 returns the stored one.  No ``from __future__ import
annotations`` here: Warp 1.2, the lowest release of the matrix in the range,
evaluates no string annotation.
"""

import numpy
import warp

warp.config.quiet = True
warp.init()  # Warp 1.2 makes no array before
warp.set_module_options({"enable_backward": False})  # the adjoints are the release's, patched or not

THREADS = 256
# (held, value): a smaller value, a larger one, an equal one.  No signed zeros, no NaN: there the CPU's
# min and max and a device's compare-and-swap may differ, whatever the release.
CASES = [(2.0, 1.0), (2.0, 3.0), (2.0, 2.0), (-1.5, 4.0)]


@warp.kernel
def one_thread(
    held: warp.array(dtype=float),
    value: warp.array(dtype=float),
    lows: warp.array(dtype=float),
    highs: warp.array(dtype=float),
    grid: warp.array3d(dtype=float),
    deep: warp.array4d(dtype=float),
    vectors: warp.array(dtype=warp.vec3),
    matrices: warp.array2d(dtype=warp.mat22),
    counts: warp.array(dtype=int),
    returned: warp.array(dtype=float),
):
    c = warp.tid()
    returned[c * 10 + 0] = warp.atomic_min(lows, c, value[c])
    returned[c * 10 + 1] = warp.atomic_max(highs, c, value[c])
    returned[c * 10 + 2] = warp.atomic_min(grid, c, 0, 1, value[c])
    returned[c * 10 + 3] = warp.atomic_max(deep, c, 1, 0, 1, value[c])
    v = warp.vec3(value[c], held[c], value[c])
    returned[c * 10 + 4] = warp.atomic_min(vectors, c, v)[0]
    returned[c * 10 + 5] = warp.atomic_max(vectors, c, v)[2]
    m = warp.mat22(value[c], held[c], held[c], value[c])
    returned[c * 10 + 6] = warp.atomic_min(matrices, c, 1, m)[0, 0]
    returned[c * 10 + 7] = warp.atomic_max(matrices, c, 1, m)[1, 1]
    returned[c * 10 + 8] = float(warp.atomic_min(counts, c, int(value[c])))
    returned[c * 10 + 9] = float(warp.atomic_max(counts, c, int(value[c]) + 5))


@warp.kernel
def many_threads(values: warp.array(dtype=float), slots: warp.array(dtype=float), own: warp.array(dtype=int)):
    i = warp.tid()
    if warp.atomic_min(slots, 0, values[i]) == values[i]:
        warp.atomic_add(own, 0, 1)
    if warp.atomic_max(slots, 1, values[i]) == values[i]:
        warp.atomic_add(own, 1, 1)


def run_corpus(device: str = "cpu") -> dict:
    """Per case, what each call returned and the arrays after it; the threads that got their own value back."""
    count = len(CASES)
    held = [case[0] for case in CASES]
    value = [case[1] for case in CASES]

    def filled(shape):
        column = numpy.array(held, dtype=numpy.float32).reshape(-1, *[1] * (len(shape) - 1))
        return warp.array(numpy.broadcast_to(column, shape).copy(), dtype=float, device=device)

    lows, highs = filled((count,)), filled((count,))
    grid, deep = filled((count, 1, 2)), filled((count, 2, 1, 2))
    vectors = warp.array([warp.vec3(h, h, h) for h in held], dtype=warp.vec3, device=device)
    matrices = warp.array([[warp.mat22(h, h, h, h)] * 2 for h in held], dtype=warp.mat22, device=device)
    counts = warp.array([int(h) for h in held], dtype=int, device=device)
    returned = warp.zeros(count * 10, dtype=float, device=device)
    inputs = [
        warp.array(held, dtype=float, device=device),
        warp.array(value, dtype=float, device=device),
        lows,
        highs,
        grid,
        deep,
        vectors,
        matrices,
        counts,
        returned,
    ]
    warp.launch(one_thread, dim=count, inputs=inputs, device=device)
    values = warp.array([float(i) + 0.5 for i in range(THREADS)], dtype=float, device=device)
    slots = warp.array([float(THREADS), -1.0], dtype=float, device=device)
    own = warp.zeros(2, dtype=int, device=device)
    warp.launch(many_threads, dim=THREADS, inputs=[values, slots, own], device=device)
    after = {"lows": lows, "highs": highs, "grid": grid, "deep": deep, "vectors": vectors, "counts": counts}
    return {
        **{
            f"returned for {case}": [float(x) for x in row]
            for case, row in zip(CASES, returned.numpy().reshape(count, 10))
        },
        **{f"{name} after": [float(x) for x in array.numpy().flatten()] for name, array in after.items()},
        "matrices after": [float(x) for x in matrices.numpy()[:, 1].flatten()],
        "threads that got their own value back (min, max)": [int(x) for x in own.numpy()],
        "slots after": [float(x) for x in slots.numpy()],
    }


# What 1.11.0 returns on the CPU, and on a device as its CUDA functions are written.
FIXED = {
    "returned for (2.0, 1.0)": [2.0, 2.0, 2.0, 2.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0],
    "returned for (2.0, 3.0)": [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0],
    "returned for (2.0, 2.0)": [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0],
    "returned for (-1.5, 4.0)": [-1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.5, -1.0, -1.0],
    "lows after": [1.0, 2.0, 2.0, -1.5],
    "highs after": [2.0, 3.0, 2.0, 4.0],
    "grid after": [2.0, 1.0, 2.0, 2.0, 2.0, 2.0, -1.5, -1.5],
    "deep after": [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 3.0, 2.0, 2.0, 2.0, 2.0, -1.5, -1.5, -1.5, 4.0],
    "vectors after": [1.0, 2.0, 1.0, 3.0, 2.0, 3.0, 2.0, 2.0, 2.0, 4.0, -1.5, 4.0],
    "counts after": [6.0, 8.0, 7.0, 9.0],
    "matrices after": [1.0, 2.0, 2.0, 1.0, 3.0, 2.0, 2.0, 3.0, 2.0, 2.0, 2.0, 2.0, 4.0, -1.5, -1.5, 4.0],
    "threads that got their own value back (min, max)": [0, 0],
    "slots after": [0.5, 255.5],
}
