"""``cupy.intersect1d`` with an empty second array reads before its start on the device: an illegal access.

What breaks.  ``intersect1d(a, b)`` looks each element of ``a`` up in ``b``
with the elementwise kernels ``_exists_kernel`` and
``_exists_and_searchsorted_kernel`` (``return_indices=True``) of
``cupy._sorting.search``.  Their body compares each element with the last
bin, ``bins[n_bins - 1]``, before it checks that there is one: for an empty
``b`` it reads ``bins[-1]``, before an empty allocation, and the kernel
faults with an illegal memory access, which leaves the CUDA context unusable.
The result is also of ``a``'s dtype where NumPy gives the two inputs' common
one.  ``cupy.isin`` and ``in1d`` return before the kernel for an empty array,
and are right.  Every CuPy 12.x and 13.x release does this, 13.6.0 included.

Fixed upstream.  cupy/cupy#9557 (merged as 89e699dc0), backported to v14 as
#9563 (9f2967c84), released in 14.0.0 and not backported to 13.x: ``git tag
--contains`` of both gives v14.0.0 onwards.  The kernels and ``intersect1d``'s
calls are the same in v12.0.0 and v13.6.0; 13.0.0 (by hand) and the cells from
13.1.0 to 13.6.0 run the patch's proofs, and 14.0.0, the first 14.x release on
PyPI, records the reference.

How the fix works.  14.0.0's kernels start with a check: with no bins, no
element is found (``out`` is ``invert``, ``y`` is 0) and nothing is read;
and its ``intersect1d`` casts the intersection to the inputs' common dtype.
The patch replaces both kernels, which ``intersect1d`` looks up on
``cupy._sorting.search`` at each call, by kernels made of the release's own
(same parameters, name, preamble and options) whose body begins with that
check; and wraps ``cupy.intersect1d`` (and its home, ``cupy._logic.truth``):
a call that binds gets the common dtype first, as 14.0.0 does, and its
intersection cast to it.  The new kernels compile on first use.

Not backported.  Nothing else of #9557.

The probe.  Without a device, the body of the installed ``_exists_kernel``
compiled by the host's C++ compiler and run for ``x = 1`` against no bins
(``_host_kernel``): it must read no bin.  With a device, ``intersect1d([1],
[])`` itself, in the probe's own interpreter, which a fault ends.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, TargetMismatch, expect

patch = Patch(
    id="cupy.intersect1d_empty",
    affected=">=12.0.0,<14.0.0",
    fixed_in="14.0.0",
    issue="cupy/cupy#9557",
    fix="cupy/cupy#9557 (v14 backport #9563)",
    summary="cupy.intersect1d with an empty second array reads bins[-1] on the device: an illegal memory access.",
)

# name: (parameters, what the check sets beside out)
KERNELS = {
    "_exists_kernel": (("x", "bins", "n_bins", "invert", "out"), ""),
    "_exists_and_searchsorted_kernel": (("x", "bins", "n_bins", "invert", "out", "y"), " y = 0;"),
}
_INTERSECT1D = Parameters("arr1", "arr2", assume_unique=False, return_indices=False)


def _guarded(cupy, released, more):
    """A kernel like ``released`` that finds nothing, and reads nothing, where there are no bins."""
    from gpushim.patches.cupy._kernels import kernel_like

    guard = (
        f"\n    if (n_bins == 0) {{  // no bins: x is nowhere\n        out = invert;{more}\n        return;\n    }}\n"
    )
    return kernel_like(cupy, released, guard + released.operation)


def _intersect1d(cupy):
    def intersect1d(wrapped, instance, args, kwargs):
        try:
            arr1, arr2, assume_unique, return_indices = _INTERSECT1D.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call CuPy itself rejects, with its own message
        common = cupy.result_type(arr1.dtype, arr2.dtype)
        result = wrapped(arr1, arr2, assume_unique, return_indices)
        if return_indices:
            values, *indices = result
            return (values.astype(common), *indices)
        return result.astype(common)

    return intersect1d


@patch.applier
def _apply(cupy, journal):
    search = expect(cupy, "_sorting.search")
    truth = expect(cupy, "_logic.truth")
    _INTERSECT1D.check(expect(truth, "intersect1d", callable))
    for name, (parameters, more) in KERNELS.items():
        released = expect(search, name, cupy.ElementwiseKernel)
        if tuple(p.name for p in released.in_params + released.out_params) != parameters:
            raise TargetMismatch(f"{name} does not take {parameters}")
        journal.replace(search, name, _guarded(cupy, released, more))
    journal.wrap((cupy, truth), "intersect1d", _intersect1d(cupy))


@patch.prober
def _probe():
    """``x = 1`` against no bins: the ``_exists_kernel`` body reads no bin (a device runs ``intersect1d`` itself)."""
    import cupy

    from gpushim import device

    if device.cuda_present():
        found = cupy.intersect1d(cupy.asarray([1.0]), cupy.asarray([], dtype="float64"))
        cupy.cuda.Device().synchronize()
        return None if found.size == 0 else f"cupy.intersect1d([1], []) is {found.get().tolist()}"
    from cupy._sorting import search

    from gpushim.patches.cupy._host_kernel import run_body

    (call,) = run_body(search._exists_kernel, {"S": "double", "T": "double"}, [EMPTY])
    return f"intersect1d's kernel reads bins{call['bins']} of no bins" if call["bins"] else None


EMPTY = {"x": 1.0, "bins": [], "n_bins": 0, "invert": False}
