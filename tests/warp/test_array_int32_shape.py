"""warp.array_int32_shape: shapes of NumPy int32 values wrap the size of a Warp array.

The corpus builds arrays on Warp's CPU device from shapes given as int32,
int64, uint8 and int16 NumPy arrays, NumPy scalars, tuples and lists of Python
ints, bools and floats, a bare int, and shapes Warp or ``int()`` reject, through
``wp.array(ptr=...)``, ``wp.empty``, ``wp.zeros``, ``wp.full`` and
``wp.array(data=...)``, passing the shape by keyword and by position.  It
records each array's shape, strides, size and capacity with the Python or NumPy
type of every number, or the exception.  Shapes whose size exceeds 2**31 are
only ever laid over a one-byte NumPy buffer with ``ptr=``: nothing is allocated
for them and nothing is read or written through them.
"""

from __future__ import annotations

import warnings

import numpy as np

from gpushim.patches.warp.array_int32_shape import patch
from tests.support import applied, gate, record_corpus

GATE = gate(patch)


BUFFER = np.zeros(1, dtype=np.uint8)
HUGE = [65536, 65537]  # 4,295,032,832 elements: 65,536 once wrapped in int32

# name: shape, given to wp.array(ptr=...) over BUFFER
OVER_A_POINTER = {
    "int32 array, wraps": lambda: np.array(HUGE, np.int32),
    "int32 array, 3-d, wraps": lambda: np.array([1504, 1080, 2048], np.int32),
    "int64 array": lambda: np.array(HUGE, np.int64),
    "uint8 array": lambda: np.array([200, 200], np.uint8),
    "int16 array": lambda: np.array([300, 300], np.int16),
    "tuple of int32 scalars, wraps": lambda: (np.int32(65536), np.int32(65537)),
    "tuple of Python ints": lambda: tuple(HUGE),
    "list of Python ints": lambda: list(HUGE),
    "Python int": lambda: 4294967296,
    "tuple of bools": lambda: (True, True),
    "tuple of floats": lambda: (2.0, 3.0),
    "generator of int32": lambda: (np.int32(size) for size in HUGE),
    "int32 scalar": lambda: np.int32(5),
    "five dims of int32": lambda: np.ones(5, np.int32),
    "string element": lambda: ("2", "x"),
    "None element": lambda: (2, None),
}

SMALL = {
    "int32 array": lambda: np.array([3, 5], np.int32),
    "int64 array": lambda: np.array([3, 5], np.int64),
    "tuple of Python ints": lambda: (3, 5),
    "int32 scalar element": lambda: (np.int32(15),),
}


def _warp():
    import warp

    warp.config.quiet = True
    warp.init()
    return warp


def typed(value):
    """A number with the name of its type, or a sequence of them."""
    if isinstance(value, (tuple, list)):
        return [typed(item) for item in value]
    return [type(value).__name__, int(value)]


def describe(make, *args, **kwargs):
    """What ``make(*args, **kwargs)`` gives: the array's bookkeeping with types, or the exception."""
    try:
        with warnings.catch_warnings(), np.errstate(over="ignore"):
            warnings.simplefilter("ignore")
            array = make(*args, **kwargs)
    except Exception as error:
        return {"raises": [type(error).__name__, str(error)]}
    return {
        "shape": typed(array.shape),
        "strides": typed(array.strides),
        "size": typed(array.size),
        "capacity": typed(array.capacity),
        "is_contiguous": array.is_contiguous,
    }


def run_corpus():
    warp = _warp()
    pointer = BUFFER.ctypes.data
    outcomes = {}
    for name, shape in OVER_A_POINTER.items():
        outcomes[f"ptr, {name}"] = describe(warp.array, ptr=pointer, shape=shape(), dtype=warp.uint8, device="cpu")
        outcomes[f"ptr, vec3, {name}"] = describe(warp.array, ptr=pointer, shape=shape(), dtype=warp.vec3, device="cpu")
    outcomes["ptr, int32 array by position"] = describe(
        warp.array, None, warp.uint8, np.array(HUGE, np.int32), ptr=pointer, device="cpu"
    )
    data = np.arange(15, dtype=np.float32)
    for name, shape in SMALL.items():
        outcomes[f"empty, {name}"] = describe(warp.empty, shape=shape(), dtype=warp.float32, device="cpu")
        outcomes[f"zeros, {name}"] = describe(warp.zeros, shape(), dtype=warp.vec2, device="cpu")
        outcomes[f"full, {name}"] = describe(warp.full, shape(), 2.5, dtype=warp.float64, device="cpu")
        outcomes[f"data, {name}"] = describe(warp.array, data, shape=shape(), dtype=warp.float32, device="cpu")
    full = warp.full(np.array([3, 5], np.int32), 2.5, dtype=warp.float32, device="cpu")
    outcomes["full, int32 array, values"] = full.numpy().tolist()
    return outcomes


def huge_over_a_pointer(shape):
    warp = _warp()
    with np.errstate(over="ignore"):
        return warp.array(ptr=BUFFER.ctypes.data, shape=shape, dtype=warp.uint8, device="cpu")


@GATE.affected_only
def test_needed_int32_shape_wraps_the_size_without_gpushim():
    array = huge_over_a_pointer(np.array(HUGE, np.int32))
    assert int(array.size) == 65536
    assert huge_over_a_pointer(tuple(HUGE)).size == 65536 * 65537


@GATE.affected_only
def test_effective_int32_shape_is_made_of_python_ints_with_gpushim():
    with applied(patch):
        array = huge_over_a_pointer(np.array(HUGE, np.int32))
    assert array.shape == tuple(HUGE) and all(type(size) is int for size in array.shape)
    assert (array.size, array.capacity) == (65536 * 65537, 65536 * 65537)


@GATE.affected_only
def test_arrays_warp_makes_itself_pass_untouched():
    """Views and copies that Warp shapes with Python ints keep working under the wrapper."""
    warp = _warp()
    with applied(patch):
        source = warp.array(np.arange(12, dtype=np.float32).reshape(3, 4), device="cpu")
        view = source[1]
        assert view.numpy().tolist() == [4.0, 5.0, 6.0, 7.0]
        assert source.reshape((4, 3)).shape == (4, 3)
        assert warp.clone(source).numpy().sum() == 66.0


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.3.2; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert outcomes["ptr, int32 array, wraps"]["size"] == ["int", 65536 * 65537]
