"""``cupy.nanargmax`` and ``cupy.nanargmin`` hand ``out`` to the reduction as ``dtype``, and ``dtype`` as ``out``.

What breaks.  ``cupy._sorting.search.nanargmax(a, axis, dtype, out,
keepdims)`` calls the reduction ``cupy._core._routines_statistics._nanargmax``,
whose parameters are ``(a, axis, out, dtype, keepdims)``, with the arguments in
its own order: ``out`` arrives as ``dtype`` and ``dtype`` as ``out``.
``cupy.nanargmax(x, out=o)`` reduces into a new array and leaves ``o``
unwritten; ``cupy.nanargmax(x, dtype='q')`` raises ``TypeError: Argument 'out'
has incorrect type``.  For bool and integer input, which cannot hold NaN, both
functions return ``argmax(a, axis=axis)`` (``argmin``), dropping ``out``,
``dtype`` and ``keepdims``.  ``nanargmin`` is the same in every respect.
CuPy 12.x and 13.x before 13.4.0 do this, with every NumPy: both halves are
in every release since 7.0.0 (by git: b56024022, in v7.0.0b3, and 79a8f4de1,
in v7.0.0b4).

Fixed upstream.  cupy/cupy#8783 (merged as 8eb16ac91), backported as #8791,
released in 13.4.0: ``git tag --contains d71237c22`` (the merge of #8791)
starts at v13.4.0.  The declared range starts where gpushim's CuPy range
does, at 12.0.0; CuPy 12.x cannot import without a CUDA driver, so the bug's
presence there is read from git: search.py's two calls and the reduction's
signature are the same in v12.0.0 and v13.3.0.

How the fix works.  13.4.0 passes the arguments in the reduction's order and
hands ``dtype``, ``out`` and ``keepdims`` on to ``argmax``/``argmin`` for bool
and integer input.  The patch wraps ``cupy.nanargmax`` and ``cupy.nanargmin``
(and their home, ``cupy._sorting.search``): the wrapper binds the call as the
release's function binds it and makes 13.4.0's two calls, to the objects the
release's own module names at each call (``search.argmax``,
``search._statistics._nanargmax``).  A call that does not bind is the release's
to reject.  Before wrapping, the patch checks both signatures the fix relies
on; the reduction is Cython, so its parameters are read from the signature
Cython embeds in its docstring.

Not backported.  13.4.0's new tests.

The probe.  ``cupy.nanargmax(x, out=o)`` on a float64 ``x`` with NaN.  On a
device it runs the reduction and checks ``o``; there the release's reduction
raises ``TypeError: unhashable type: 'ndarray'`` before it runs, as it looks
its loop up by ``o`` as a dtype, and that raise is the bug showing.  Without
a device it gives the arrays memory nobody touches and stands a recorder in
for the reduction, so it sees the arguments the reduction would get.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect
from gpushim.patches.cupy._memory import untouched_memory

patch = Patch(
    id="cupy.nanargmax_out_dtype",
    affected=">=12.0.0,<13.4.0",
    fixed_in="13.4.0",
    issue="cupy/cupy#8783",
    fix="cupy/cupy@8eb16ac91 (backport #8791)",
    summary="cupy.nanargmax/nanargmin pass out as dtype and dtype as out, and drop both for integer and bool input.",
)

# nanargmax, nanargmin, argmax and argmin, and the reductions the first two call.
_PUBLIC = Parameters("a", axis=None, dtype=None, out=None, keepdims=False)
_REDUCTION = Parameters("a", "axis", "out", "dtype", "keepdims")


def _fixed(search, unmasked, reduction):
    """A wrapper making 13.4.0's calls: ``search.<unmasked>`` for bool and integers, else the reduction."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            a, axis, dtype, out, keepdims = _PUBLIC.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)
        if a.dtype.kind in "biu":
            return getattr(search, unmasked)(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
        return getattr(search._statistics, reduction)(a, axis, out, dtype, keepdims)

    return wrapper


@patch.applier
def _apply(cupy, journal):
    search = expect(cupy, "_sorting.search")
    for name, unmasked in (("nanargmax", "argmax"), ("nanargmin", "argmin")):
        for function in (name, unmasked):
            _PUBLIC.check(expect(search, function, callable))
        reduction = f"_{name}"
        _REDUCTION.check(expect(search, f"_statistics.{reduction}", callable))
        journal.wrap((cupy, search), name, _fixed(search, unmasked, reduction))


@patch.prober
def _probe():
    """``cupy.nanargmax(x, out=o)``: the reduction must get ``o`` as its ``out``, and write 2 into it on a device."""
    import math

    import cupy

    from gpushim import device

    if device.cuda_present():
        x, out = cupy.array([0.0, math.nan, 3.0, 1.0]), cupy.full((), -1, "q")
        try:
            result = cupy.nanargmax(x, out=out)
        except TypeError as error:
            return f"cupy.nanargmax([0, nan, 3, 1], out=o) raises TypeError: {error}"
        if result is not out or int(out) != 2:
            return f"cupy.nanargmax([0, nan, 3, 1], out=o) leaves o = {int(out)}, not 2"
        return None
    from cupy._sorting import search

    calls = []
    statistics, reduction, allocator = search._statistics, search._statistics._nanargmax, cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(untouched_memory(cupy))
    statistics._nanargmax = lambda a, axis, out, dtype, keepdims: calls.append((out, dtype))
    try:
        x, out = cupy.empty((4,), "d"), cupy.empty((), "q")
        cupy.nanargmax(x, out=out)
    finally:
        statistics._nanargmax = reduction
        cupy.cuda.set_allocator(allocator)
    if [(given is out, dtype) for given, dtype in calls] != [(True, None)]:
        return "cupy.nanargmax(x, out=o) hands o to the reduction as its dtype, and out=None"
    return None
