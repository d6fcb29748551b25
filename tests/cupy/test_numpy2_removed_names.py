"""cupy.numpy2_removed_names: CuPy 13.0/13.1 under NumPy 2, whose import reads names NumPy 2 removed.

The cell ``cupy-13.1.0-numpy2`` runs with ``pytest --gpushim``: there CuPy
imports only with gpushim active.  Its corpus (the names ``import cupy``
binds, dtypes, the typing helpers, the exceptions and invalid axes through
``cupy._core.internal``, all visible without a GPU) is compared with 13.1.0's
own on NumPy 1.26.4, the cell ``cupy-13.1.0``.
"""

import warnings

import pytest

cupy = pytest.importorskip("cupy")

import numpy

import gpushim
from gpushim.patches.cupy.numpy2_removed_names import (
    _CALL_TIME_READERS,
    _COMPILED_READS,
    _GONE,
    _READ_COMPILED,
    patch,
)
from gpushim.releases import is_affected
from tests.support import gate, record_corpus, run_python

GATE = gate(patch)

TYPE_ALIASES = ("float_", "longfloat", "singlecomplex", "cfloat", "complex_")
EXCEPTIONS = ("AxisError", "ComplexWarning", "ModuleDeprecationWarning", "RankWarning", "TooHardError")
EXCEPTIONS += ("VisibleDeprecationWarning",)
SCALAR_TYPES = ("bool_", "int8", "uint16", "int64", "float16", "float32", "float64", "complex64", "complex128")
TYPING_ARGUMENTS = [
    numpy.float64,
    numpy.int8,
    numpy.generic,
    numpy.integer,
    numpy.object_,
    numpy.dtype("f4"),
    numpy.dtype("c16"),
    numpy.zeros(2, "u2"),
    float,
    int,
    complex,
    bool,
    object,
    "i4",
    "f8",
    "d",
    1.5,
    None,
    "not a type",
    [1],
]
ABSTRACT = (numpy.generic, numpy.integer)
TYPING_PAIRS = [("i4", numpy.integer), (numpy.float32, numpy.floating), ("f8", "i8"), (float, numpy.float64)]
SUBCLASS_PAIRS = [(numpy.float64, numpy.floating), (int, object), (1, int), (numpy.int8, (numpy.integer, float))]
AXES = [(0, 1), (1, 2), (-1, 2), (-2, 2), (2, 2), (-3, 2), (5, 2), (0, 0), (-1, 0)]
AXIS_TUPLES = [((0, 1), 2), ((1, 1), 2), ((-1, 0), 2), ((2,), 2), ((-3, 0), 2), ((0,), 0)]


NUMPY_TYPES = SCALAR_TYPES + ("generic", "integer", "floating", "number", "object_", "ndarray")


def described(value):
    numpys = [name for name in NUMPY_TYPES if getattr(numpy, name) is value]  # NumPy 2 renamed bool_'s class
    if numpys:
        return f"numpy.{numpys[0]}"
    if isinstance(value, type):
        return f"class {value.__qualname__}"
    if isinstance(value, numpy.dtype):
        return f"dtype {value.str}"
    return repr(value)


def outcome(call):
    """What ``call()`` gives or raises, with the warnings it emits."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ended = described(call())
        except Exception as error:
            ended = f"raises {type(error).__name__}: {error}"
    return [ended, [f"{warning.category.__name__}: {warning.message}" for warning in caught]]


def corpus():
    from cupy._core import _scalar, internal
    from cupy.testing import _loops

    outcomes = {}
    for name in TYPE_ALIASES:
        outcomes[f"cupy.{name}"] = outcome(lambda name=name: numpy.dtype(getattr(cupy, name)))
        outcomes[f"cupy.dtype(cupy.{name})"] = outcome(lambda name=name: cupy.dtype(getattr(cupy, name)))
    for name in SCALAR_TYPES + TYPE_ALIASES:
        outcomes[f"get_typename({name})"] = outcome(lambda name=name: _scalar.get_typename(getattr(cupy, name)))
    for name in EXCEPTIONS:
        kind = getattr(cupy, name)
        numpys = getattr(numpy.exceptions, name, None) or getattr(numpy, name)  # 1.26 keeps RankWarning on numpy
        outcomes[f"cupy.{name}"] = kind is numpys  # NumPy 2 made RankWarning a RuntimeWarning: the bases differ
    outcomes["str(cupy.AxisError(5, 2))"] = outcome(lambda: str(cupy.AxisError(5, 2)))
    outcomes["cupy.testing's NumPy errors"] = [kind.__name__ for kind in _loops._numpy_errors]
    for helper in ("obj2sctype", "issctype", "sctype2char"):
        for argument in TYPING_ARGUMENTS:
            if helper == "sctype2char" and any(argument is abstract for abstract in ABSTRACT):
                continue  # NumPy 2's dtype refuses what 1.26 converted with a DeprecationWarning
            call = getattr(cupy, helper)
            outcomes[f"{helper}({described(argument)})"] = outcome(lambda call=call, argument=argument: call(argument))
    for first, second in TYPING_PAIRS:
        outcomes[f"issubsctype({first!r}, {second!r})"] = outcome(lambda a=first, b=second: cupy.issubsctype(a, b))
    for first, second in SUBCLASS_PAIRS:
        outcomes[f"issubclass_({first!r}, {second!r})"] = outcome(lambda a=first, b=second: cupy.issubclass_(a, b))
    outcomes["format_parser"] = outcome(lambda: cupy.format_parser(["f8", "i4"], ["a", "b"], None).dtype)
    outcomes["DataSource"] = outcome(lambda: type(cupy.DataSource(None)).__name__)
    for axis, ndim in AXES:
        outcomes[f"_normalize_axis_index({axis}, {ndim})"] = outcome(
            lambda a=axis, n=ndim: internal._normalize_axis_index(a, n)
        )
    for axes, ndim in AXIS_TUPLES:
        outcomes[f"_normalize_axis_indices({axes}, {ndim})"] = outcome(
            lambda a=axes, n=ndim: internal._normalize_axis_indices(a, n)
        )
    return outcomes


@GATE.recorded_only
def test_faithful_names_dtypes_and_invalid_axes():
    outcomes = record_corpus(patch, corpus)
    assert (
        outcomes["_normalize_axis_index(5, 2)"][0]
        == "raises AxisError: axis 5 is out of bounds for array of dimension 2"
    )


@GATE.affected_only
def test_numpy_holds_none_of_the_lent_names_once_cupy_imported():
    lent = [name for name in dir(numpy) if name in ("float_", "AxisError", "safe_eval", "obj2sctype")]
    assert (lent, hasattr(numpy.lib, "index_tricks")) == ([], False)
    with pytest.raises(AttributeError, match="was removed in the NumPy 2.0 release"):
        numpy.float_  # noqa: B018


WATCHED_WHILE_CUPY_IMPORTS = """
import threading, numpy, numpy.lib, gpushim.auto
seen, done = set(), threading.Event()

def watch():
    while not done.is_set():
        seen.update(name for name in ("float_", "complex_", "AxisError", "find_common_type") if hasattr(numpy, name))
        seen.update(["lib.index_tricks"] if hasattr(numpy.lib, "index_tricks") else [])

watching = threading.Thread(target=watch)
watching.start()
import cupy
done.set()
watching.join()
print(sorted(seen), cupy._numpy is numpy)
"""


@GATE.affected_only
def test_no_other_thread_sees_the_lent_names_while_cupy_imports():
    """What is lent is for CuPy's own modules: ``hasattr(numpy, "float_")``, the usual NumPy 1 test, stays False.

    Only 13.0.0's compiled ``cupy._core._scalar`` needs two names on ``numpy`` itself while it initialises.
    """
    finished = run_python(WATCHED_WHILE_CUPY_IMPORTS)
    shared = sorted(_READ_COMPILED) if is_affected(GATE.release[1], _COMPILED_READS) else []
    assert finished.stdout.splitlines() == [f"{shared} True"], finished.stderr[-3000:]


@GATE.affected_only
def test_status_says_what_was_lent_while_cupy_executed():
    code = "import gpushim.auto, cupy, gpushim; print(gpushim.record('cupy.numpy2_removed_names')['reason'])"
    finished = run_python(code)
    assert finished.returncode == 0, finished.stderr[-3000:]
    reason = finished.stdout.strip()
    assert reason.startswith("numpy 2.2.6 >=2; cupy executed with numpy.AxisError, ")
    assert reason.endswith(", numpy.safe_eval, numpy.lib.index_tricks lent, withdrawn since")


@GATE.affected_only
@pytest.mark.parametrize("name", sorted(_GONE))
def test_functions_numpy_2_removed_without_replacement_raise_as_on_13_2_0(name):
    with pytest.raises(RuntimeError, match=r"This function has been removed in NumPy v2\."):
        getattr(cupy, name)()


@GATE.affected_only
def test_only_the_call_time_readers_see_the_view_and_unpatch_gives_them_numpy_back():
    import importlib
    import sys

    readers = [importlib.import_module(name) for name in _CALL_TIME_READERS]
    gpushim.patch(patch.id)
    view = readers[0].numpy
    assert view.__wrapped__ is numpy and all(reader.numpy is view for reader in readers)
    others = [m for name, m in list(sys.modules.items()) if name.startswith("cupy") and name not in _CALL_TIME_READERS]
    assert not any(vars(module).get("numpy") is view for module in others)  # fusion may hold fuse_python_scalar's
    gpushim.unpatch(patch.id)
    assert all(reader.numpy is numpy for reader in readers)
