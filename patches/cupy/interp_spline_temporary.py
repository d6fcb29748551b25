"""``make_interp_spline`` with ``bc_type`` lets its de Boor kernel write past the end of a temporary.

What breaks.  ``cupyx.scipy.interpolate.make_interp_spline(x, y, k,
bc_type=...)`` with derivatives at the ends computes each boundary row with
the ``d_boor`` kernel, which keeps the ``k + 1`` B-spline values and ``k``
saved values of its recursion in a scratch array: it writes ``2k + 1``
float64.  The function hands it ``temp = cupy.zeros((nt,))``, ``nt`` the
number of coefficients: with the default knots ``n + k - 1`` for ``n``
points, shorter than ``2k + 1`` wherever ``n < k + 2``, such as four points
and ``k=3, bc_type="clamped"`` (48 bytes for 56 written), and with knots of
the caller's as short as ``n + nleft + nright``.  CuPy's memory pool rounds
every block up to a multiple of 512 bytes, so up to ``k = 31`` what is
written past ``temp`` lands in its own block; from ``k = 32`` (520 bytes
written) it lands in whatever the pool put after that block, and with an
allocator that does not round, in whatever lies after ``temp``.  CuPy
12.0.0 to 13.2.0 do this: the allocation came with f2a795f52 ("use CSR
format arrays / spsolve", first in v12.0.0), and 12.x has the function of
13.2.0 but for comments (read from git: 12.x cannot import without a
driver).

Fixed upstream.  cupy/cupy#8388, backported as #8390, released in 13.3.0,
which allocates ``2 * k + 1`` elements: ``git tag --contains ec30ddd75``
(the merge of #8390) starts at v13.3.0, and that line is all v13.3.0
changes in ``cupyx/scipy/interpolate`` since v13.2.0.

How the fix works.  The patch compiles the release's own
``make_interp_spline`` again from its source, with that one allocation's
size read as 13.3.0's (``gpushim.source.recompiled``): it requires exactly
one ``temp = cupy.zeros((nt, ), dtype=float)`` and rewrites ``(nt, )`` as
``(2 * k + 1, )``; every other statement is the release's, so the function
is 13.3.0's.  It wraps the function where ``cupyx.scipy.interpolate``,
``_bspline2`` and ``_rgi`` bind it; ``cupyx.scipy.signal._ltisys`` binds it
too, when imported, and calls it with ``k=1`` only, which returns before the
temporary.

Not backported.  13.3.0's other changes are outside this module.

The probe.  ``make_interp_spline(arange(4.0), arange(4.0), k=3,
bc_type="clamped")`` run on NumPy arrays (``on_numpy``): the ``d_boor``
kernel must get a temporary of 56 bytes, ``2k + 1`` float64.  No device is
needed.
"""

from __future__ import annotations

import contextlib

from gpushim import Patch, TargetMismatch, expect, expect_same
from gpushim.patches.cupy._numpy_view import numpy_view
from gpushim.patches.cupy._on_numpy import import_cupyx, numpy_for_cupy

patch = Patch(
    id="cupy.interp_spline_temporary",
    affected=">=12.0.0,<13.3.0",
    fixed_in="13.3.0",
    issue="cupy/cupy#8388",
    fix="cupy/cupy#8388 (backport #8390)",
    summary="make_interp_spline with bc_type gives its de Boor kernel a temporary of nt float64 where it writes 2k+1.",
    module="cupyx.scipy.interpolate",
)


def _sized_as_fixed(tree):
    """Rewrite the one ``temp = cupy.zeros((nt, ), dtype=float)`` of ``tree`` as ``cupy.zeros((2 * k + 1, ), ...)``."""
    import ast

    released = "temp = cupy.zeros((nt, ), dtype=float)"
    shape = ast.dump(ast.parse(released).body[0])
    found = [node for node in ast.walk(tree) if isinstance(node, ast.Assign) and ast.dump(node) == shape]
    if len(found) != 1:
        raise TargetMismatch(f"make_interp_spline has {len(found)} statements {released!r}, expected 1")
    fixed = ast.parse("(2 * k + 1,)", mode="eval").body
    found[0].value.args[0] = ast.copy_location(fixed, found[0].value.args[0])  # pyright: ignore[reportAttributeAccessIssue]
    ast.fix_missing_locations(tree)


@patch.applier
def _apply(interpolate, journal):
    import types

    from gpushim.source import recompiled

    released = expect(interpolate, "_bspline2.make_interp_spline", types.FunctionType)
    owners = [interpolate, interpolate._bspline2, expect(interpolate, "_rgi", types.ModuleType)]
    for owner in owners:
        found = expect(owner, "make_interp_spline")
        expect_same(found, released, f"{owner.__name__}.make_interp_spline", "_bspline2's")
    fixed = recompiled(released, _sized_as_fixed)

    def make_interp_spline(wrapped, instance, args, kwargs):
        return fixed(*args, **kwargs)

    journal.wrap(owners, "make_interp_spline", make_interp_spline)


class Stop(Exception):
    """Where ``make_interp_spline`` run on NumPy stops, at a launch or a solve the host cannot do: what it got."""


class _StandInBSpline:
    """What ``_bspline2`` reads of ``BSpline`` before its solve, without kernels: a spline is what it is made of."""

    @staticmethod
    def design_matrix(x, t, k):
        return None  # read only by the solve, where the run stops

    @classmethod
    def construct_fast(cls, t, c, k, axis=0):
        return {"t": t, "c": c, "k": k, "axis": axis}


def _kernel(module, name, *types):
    def launch(grid, block, args):
        if name == "d_boor":
            temporary, k = args[7], args[2]
            raise Stop({"d_boor temporary": temporary.nbytes, "d_boor writes": (2 * k + 1) * 8})

    return launch


def _solve(matrix, rhs):
    raise Stop({"solve rhs": rhs})


@contextlib.contextmanager
def on_numpy(interpolate):
    """``make_interp_spline`` on NumPy arrays for a ``with`` block, up to its first ``d_boor`` launch or its solve,
    which raise :class:`Stop` with the temporary's size and what the kernel writes, or the right-hand side;
    ``find_interval`` does nothing.  ``_bspline2`` and ``_bspline`` (whose helpers 14.x calls) read ``cupy``
    as NumPy, for every thread, as :func:`numpy_for_cupy` has it."""
    import numpy

    cupy = numpy_view(numpy, {"float_": numpy.float64, "complex_": numpy.complex128})  # NumPy 2 lost both
    stand_ins = {"BSpline": _StandInBSpline, "_get_module_func": _kernel, "spsolve": _solve}
    with numpy_for_cupy(interpolate._bspline, cupy=cupy), numpy_for_cupy(interpolate._bspline2, cupy=cupy, **stand_ins):
        yield


@patch.prober
def _probe():
    """Four points, ``k=3``, ``bc_type="clamped"``, on NumPy: the d_boor kernel must get 56 bytes, ``2k + 1``."""
    import numpy

    interpolate = import_cupyx("cupyx.scipy.interpolate")
    x = numpy.arange(4.0)
    try:
        with on_numpy(interpolate):
            interpolate.make_interp_spline(x, x, k=3, bc_type="clamped")
    except Stop as stop:
        got = stop.args[0].get("d_boor temporary")
    else:
        got = None
    if got != 56:
        return f"make_interp_spline(4 points, k=3, bc_type='clamped') gives d_boor {got} bytes, where it writes 56"
    return None
