"""``import cupy`` fails under NumPy 2 on 13.0 and 13.1, reading names NumPy 2 removed; an invalid axis then fails too.

What breaks.  CuPy 13.0 and 13.1 require ``numpy<1.29``; installed over NumPy
2 anyway (``--no-deps``), ``import cupy`` raises AttributeError or
ImportError on names NumPy 2 removed.  13.0.0 stops in the Cython module
``cupy._core._scalar``, which reads ``numpy.float_`` and ``numpy.complex_``
while it initialises; both releases stop in ``cupy.testing._loops``
(``numpy.AxisError``), and ``cupy/__init__.py`` itself takes 22 removed names
from ``numpy`` (``float_``, ``longfloat``, ``singlecomplex``, ``cfloat``,
``complex_``, the exceptions ``AxisError``, ``ComplexWarning``,
``ModuleDeprecationWarning``, ``RankWarning``, ``TooHardError``,
``VisibleDeprecationWarning``, ``format_parser``, ``DataSource``,
``obj2sctype``, ``issctype``, ``issubclass_``, ``issubsctype``,
``sctype2char``, ``find_common_type``, ``get_array_wrap``,
``set_string_function``, ``disp``, ``safe_eval``), and ``cupy.lib._shape_base``
imports ``numpy.lib.index_tricks``.  Past the import, CuPy's own code raises
``numpy.AxisError``, ``numpy.RankWarning`` and ``numpy.ComplexWarning`` at call
time: an invalid axis given to ``cupy._core.internal._normalize_axis_index``
(which most axis arguments go through), ``diagonal``, ``transpose``,
``sort``/``partition`` of a 0-d array, ``median``, a reduction inside
``cupy.fuse``, ``cupyx.scipy.fft.dct``/``dst``, ``polyfit`` and a complex to
real cast in ``cupyx.jit`` meet ``AttributeError: module 'numpy' has no
attribute ...`` instead.  12.x reads the same names but cannot import at all
without a CUDA driver, so no CPU cell can show it: it is left out of the range.

Fixed upstream.  cupy/cupy#8346 "make CuPy import under NumPy 2.0", backported
to v13 by #8357 (with #8050, in 13.1.0, for ``_scalar``), released in 13.2.0:
the exceptions come from a new ``cupy.exceptions`` (NumPy's, from
``numpy.exceptions`` under NumPy 2), the type aliases from their NumPy 2
names, ``format_parser`` and ``DataSource`` from where NumPy 2 moved them, the
five typing helpers are CuPy's own, and ``find_common_type``,
``get_array_wrap``, ``set_string_function``, ``disp`` and ``safe_eval`` raise
RuntimeError saying that NumPy 2 removed them.

How the fix works.  Right before ``cupy/__init__.py`` executes, the names
``numpy`` lacks are lent to CuPy's own modules while ``cupy`` executes (and
``index_tricks`` of ``numpy.lib``): the NumPy 2 objects 13.2.0 uses, CuPy's
own typing helpers written here after NumPy 1.26's, and for the five
functions NumPy 2 removed without a replacement stand-ins that raise as
13.2.0's do.  Their ``import numpy`` and ``from numpy import ...`` get a view
of ``numpy`` that holds them, and their globals hold ``numpy`` itself again
once ``cupy`` has executed, whether or not the import succeeded; no other
code, in this thread or another, sees them (status says what was lent), and
CuPy keeps the objects its import bound.  Only on 13.0.0, whose compiled
``cupy._core._scalar`` reads ``float_`` and ``complex_`` while it
initialises, and imports without the view, are those two bound on ``numpy``
itself for that while.  For the call-time reads, the modules that make them
(``cupy._core.internal``, ``_routines_indexing``, ``_routines_manipulation``,
``_routines_sorting``, ``_routines_statistics``,
``cupy.lib._routines_poly``, ``cupyx.jit._compile``,
``cupyx.scipy.fft._realtransforms``, all loaded by ``import cupy``) get a view
of ``numpy`` as their global ``numpy``: a module that holds the exceptions and
forwards every other attribute to ``numpy`` itself.  A Cython module looks its
globals up in its module dictionary at each use (its cache of them is keyed
on the dictionary's version), and the attribute on it at each use, so the view
is what those reads find; nothing outside these modules sees it.

Not backported.  The stand-ins are 13.2.0's answer, not NumPy 1's
functions: ``cupy.find_common_type``, ``get_array_wrap``,
``set_string_function``, ``disp`` and ``safe_eval`` raise RuntimeError where
13.1.0 on NumPy 1.26 runs NumPy's.  What NumPy 2 itself changed stays:
``cupy.RankWarning`` is NumPy 2's, a RuntimeWarning (NumPy 1's was a
UserWarning), and ``sctype2char`` of an abstract type (``numpy.integer``)
raises where NumPy 1.26's dtype converted it with a DeprecationWarning.  What 13.2.0 left reading removed names is
left as it is: ``numpy.ComplexWarning`` in ``cupy._core.core``, ``_dtype``
and ``_reduction`` (a complex to real ``astype``), ``np.compat`` in
``cupy.fft``, ``np.issubclass_`` in ``cupyx.scipy.signal`` and
``cupy.bool8``/``int0``/``uint0``.  Modules that ``import cupy`` does not load
are not given the view, nor is ``cupy._core.fusion``, whose global ``numpy``
``cupy.fuse_python_scalar`` replaces with a view of its own: a reduction
with an invalid axis inside ``cupy.fuse`` still meets ``numpy.AxisError``.
NumPy 2's other changes (NEP 50 promotion, ``copy=``) have patches of their
own.

The probe.  ``cupy._core.internal._normalize_axis_index(3, 1)`` must raise
NumPy's AxisError; on an affected release the import already fails, which the
contract counts as the bug showing.
"""

from __future__ import annotations

from gpushim import Patch
from gpushim.patches.cupy._numpy_view import give_view, numpy_view

patch = Patch(
    id="cupy.numpy2_removed_names",
    affected=">=13.0.0,<13.2.0",
    fixed_in="13.2.0",
    issue="cupy/cupy#8346",
    fix="cupy/cupy#8346 (backport #8357)",
    summary="import cupy fails under NumPy 2 on names NumPy 2 removed (numpy.float_, numpy.AxisError...).",
    only_with={"numpy": ">=2"},
    before="cupy",
)

_EXCEPTIONS = (
    "AxisError",
    "ComplexWarning",
    "ModuleDeprecationWarning",
    "RankWarning",
    "TooHardError",
    "VisibleDeprecationWarning",
)
_ALIASES = {
    "float_": "float64",
    "longfloat": "longdouble",
    "singlecomplex": "complex64",
    "cfloat": "complex128",
    "complex_": "complex128",
}
# Removed without a replacement, and the replacement 13.2.0's message names.
_GONE = {
    "find_common_type": "`promote_types` or `result_type`",
    "set_string_function": "`np.set_printoptions`",
    "get_array_wrap": "<no replacement>",
    "disp": "your own print function",
    "safe_eval": "`ast.literal_eval`",
}
# What 13.0.0's compiled cupy._core._scalar reads on numpy while it initialises (13.1.0 reads neither, #8050).
_READ_COMPILED = ("float_", "complex_")
_COMPILED_READS = "<13.1.0"
# The modules that read a removed name on ``numpy`` when called.
_CALL_TIME_READERS = (
    "cupy._core.internal",
    "cupy._core._routines_indexing",
    "cupy._core._routines_manipulation",
    "cupy._core._routines_sorting",
    "cupy._core._routines_statistics",
    "cupy.lib._routines_poly",
    "cupyx.jit._compile",
    "cupyx.scipy.fft._realtransforms",
)


def _removed_names(numpy) -> dict[str, object]:
    """What CuPy 13.1.0's import reads from ``numpy``, as 13.2.0 gives it under NumPy 2."""
    import numpy.exceptions
    import numpy.lib.npyio
    import numpy.rec

    names = {name: getattr(numpy.exceptions, name) for name in _EXCEPTIONS}
    names.update({name: getattr(numpy, alias) for name, alias in _ALIASES.items()})
    names.update(format_parser=numpy.rec.format_parser, DataSource=numpy.lib.npyio.DataSource)
    names.update(_typing_helpers(numpy))
    names.update({name: _removed(name, recommendation) for name, recommendation in _GONE.items()})
    return names


def _typing_helpers(numpy) -> dict[str, object]:
    """``obj2sctype``, ``issctype``, ``issubclass_``, ``issubsctype`` and ``sctype2char`` as NumPy 1.26 defines them."""

    def issubclass_(arg1, arg2):
        try:
            return issubclass(arg1, arg2)
        except TypeError:
            return False

    def obj2sctype(rep, default=None):
        if isinstance(rep, type) and issubclass(rep, numpy.generic):
            return rep
        if isinstance(rep, numpy.ndarray):
            return rep.dtype.type
        try:
            return numpy.dtype(rep).type
        except Exception:
            return default

    def issubsctype(arg1, arg2):
        return issubclass(obj2sctype(arg1), obj2sctype(arg2))

    def sctype2char(sctype):
        scalar_type = obj2sctype(sctype)
        if scalar_type is None:
            raise ValueError("unrecognized type")
        return numpy.dtype(scalar_type).char

    def issctype(rep):
        if not isinstance(rep, (type, numpy.dtype)):
            return False
        try:
            scalar_type = obj2sctype(rep)
            return bool(scalar_type) and scalar_type != numpy.object_
        except Exception:
            return False

    return {function.__name__: function for function in (issubclass_, obj2sctype, issubsctype, sctype2char, issctype)}


def _removed(name: str, recommendation: str):
    """A stand-in for ``name``, which raises RuntimeError as CuPy 13.2.0's does under NumPy 2."""

    def removed(*args, **kwargs):
        raise RuntimeError(
            f"''This function has been removed in NumPy v2.\nUse {recommendation} instead.\n\n"
            "CuPy has been providing this function as an alias to the NumPy\n"
            "implementation, so it cannot be used in environments with NumPy\n"
            "v2 installed. If you rely on this function and you cannot modify\n"
            f"the code to use {recommendation}, please downgrade NumPy to v1.26\n"
            "or earlier.\n"
        )

    removed.__name__ = removed.__qualname__ = name
    return removed


@patch.preparer
def _lend(cupy, journal):
    import numpy
    import numpy.lib

    from gpushim.releases import is_affected

    compiled = _READ_COMPILED if is_affected(journal.release[1], _COMPILED_READS) else ()
    for name, value in _removed_names(numpy).items():
        if name not in vars(numpy):
            journal.lend(numpy, name, value, shared=name in compiled)
    if "index_tricks" not in vars(numpy.lib):
        import numpy.lib._index_tricks_impl

        journal.lend(numpy.lib, "index_tricks", numpy.lib._index_tricks_impl)


@patch.applier
def _give_the_view(cupy, journal):
    import importlib

    import numpy
    import numpy.exceptions

    removed = {name: getattr(numpy.exceptions, name) for name in _EXCEPTIONS if name not in vars(numpy)}
    modules = [importlib.import_module(name) for name in _CALL_TIME_READERS]
    give_view(journal, modules, "numpy", numpy, numpy_view(numpy, removed))


@patch.prober
def _probe():
    """An invalid axis through ``cupy._core.internal``, where most of CuPy's axis arguments are checked."""
    import numpy
    from cupy._core import internal

    try:
        internal._normalize_axis_index(3, 1)
    except getattr(numpy, "exceptions", numpy).AxisError:
        return None
    except AttributeError as error:
        return f"_normalize_axis_index(3, 1) raises AttributeError: {error}"
    return "_normalize_axis_index(3, 1) returns"
