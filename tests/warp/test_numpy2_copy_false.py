"""warp.numpy2_copy_false: Warp before 1.2.2 converts data with np.array(copy=False), which NumPy 2 refuses to copy.

The corpus converts Python lists, tuples, nested lists, scalars and NumPy
arrays of eleven dtypes (contiguous, strided and 2-d) into Warp arrays of
int32, float32, float64, vec3 and mat22 and of the inferred dtype, with and
without ``copy=False``, through ``wp.array``, ``wp.from_numpy``,
``array.assign`` and ``wp.full``, and passes tuples, lists and NumPy arrays as
vector and matrix arguments to a kernel.  It records each result's Warp dtype,
shape, values and whether it aliases its NumPy source, or the exception with
its message.  The reference is the same release under NumPy 1.26.4.  Values
that NumPy 2 itself converts otherwise (Python integers out of the target's
range) are left out.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from gpushim.patches.warp.numpy2_copy_false import patch
from tests.support import applied, gate, record_corpus

GATE = gate(patch)

PYTHON_DATA = {
    "list of ints": [1, 2, 3, 4, 5, 6],
    "list of floats": [0.5, 1.5, -2.25, 3.0, 4.75, 6.5],
    "list of bools": [True, False, True, True, False, False],
    "mixed list": [1, 2.5, True, 4, 5, 6],
    "tuple of floats": (1.0, 2.0, 3.0, 4.0, 5.0, 6.0),
    "nested list, 2x3": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
    "nested list, 3x2": [[1, 2], [3, 4], [5, 6]],
    "nested list, 2x2x2": [[[1, 2], [3, 4]], [[5, 6], [7, 8]]],
    "nested list of tuples": [(1.0, 2.0, 3.0), (4.0, 5.0, 6.0)],
    "ragged nested list": [[1.0, 2.0, 3.0], [4.0, 5.0]],
    "list of 4": [1.0, 2.0, 3.0, 4.0],
    "empty list": [],
    "int scalar": 7,
    "float scalar": 2.5,
    "list of strings": ["1", "2", "3"],
    "list with None": [1.0, None, 3.0],
}

NUMPY_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64")

WARP_DTYPES = (None, "int32", "float32", "float64", "vec3", "mat22")


def numpy_data():
    """NumPy sources by name: six values of each dtype, contiguous, every other one of twelve, and 2x3."""
    data = {}
    for dtype in NUMPY_DTYPES:
        values = np.arange(12) % 7
        data[f"{dtype} array"] = values[:6].astype(dtype)
        data[f"strided {dtype} array"] = values.astype(dtype)[::2]
        data[f"2x3 {dtype} array"] = values[:6].astype(dtype).reshape(2, 3)
    data["Fortran-ordered float32 3x2 array"] = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(3, 2))
    data["float32 0-d array"] = np.array(1.5, dtype=np.float32)
    data["float64 3x2x2 array"] = np.arange(12, dtype=np.float64).reshape(3, 2, 2)
    return data


def _warp():
    import warp

    warp.config.quiet = True
    warp.init()
    return warp


def outcome(make, source=None):
    """What ``make()`` gives: the Warp array's dtype, shape, values and aliasing of ``source``, or the exception."""
    warp = _warp()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = make()
    except Exception as error:
        return {"raises": [type(error).__name__, str(error)]}
    described = {
        "dtype": warp.context.type_str(result.dtype),
        "shape": list(result.shape),
        "values": result.numpy().tolist(),
    }
    if isinstance(source, np.ndarray):
        described["aliases source"] = result.ptr == source.ctypes.data
    return described


def conversions(warp):
    outcomes = {}
    sources = {**PYTHON_DATA, **numpy_data()}
    for source_name, source in sources.items():
        for dtype_name in WARP_DTYPES:
            dtype = {} if dtype_name is None else {"dtype": getattr(warp, dtype_name)}
            into = dtype_name or "inferred dtype"
            outcomes[f"wp.array, {source_name} into {into}"] = outcome(
                lambda source=source, dtype=dtype: warp.array(source, **dtype, device="cpu")
            )
            outcomes[f"wp.array copy=False, {source_name} into {into}"] = outcome(
                lambda source=source, dtype=dtype: warp.array(source, **dtype, copy=False, device="cpu"), source
            )
        for shape in ((6,), (2, 3)):
            outcomes[f"wp.array shape={shape}, {source_name} into float32"] = outcome(
                lambda source=source, shape=shape: warp.array(source, dtype=warp.float32, shape=shape, device="cpu")
            )
    return outcomes


def from_numpy(warp):
    outcomes = {}
    for source_name, source in numpy_data().items():
        for dtype_name in WARP_DTYPES:
            dtype = {} if dtype_name is None else {"dtype": getattr(warp, dtype_name)}
            outcomes[f"wp.from_numpy, {source_name} into {dtype_name or 'inferred dtype'}"] = outcome(
                lambda source=source, dtype=dtype: warp.from_numpy(source, **dtype, device="cpu"), source
            )
    return outcomes


def assignments(warp):
    outcomes = {}
    targets = {"float32 x6": (6, "float32"), "int32 x6": (6, "int32"), "vec3 x2": (2, "vec3"), "mat22 x1": (1, "mat22")}
    sources = {
        "list of floats": PYTHON_DATA["list of floats"],
        "nested list, 2x3": PYTHON_DATA["nested list, 2x3"],
        "list of 4": PYTHON_DATA["list of 4"],
        "float64 array": np.arange(6, dtype=np.float64),
        "int64 array": np.arange(6, dtype=np.int64),
        "float32 array": np.arange(6, dtype=np.float32),
    }
    for target_name, (size, dtype_name) in targets.items():
        for source_name, source in sources.items():

            def assign(size=size, dtype_name=dtype_name, source=source):
                array = warp.zeros(size, dtype=getattr(warp, dtype_name), device="cpu")
                array.assign(source)
                return array

            outcomes[f"assign, {source_name} to {target_name}"] = outcome(assign)
    return outcomes


def fills(warp):
    values = {
        "int": 3,
        "float": 2.5,
        "tuple of 3 floats": (1.0, 2.0, 3.0),
        "list of 3 ints": [1, 2, 3],
        "tuple of 2 ints": (4, 5),
        "nested list, 2x2": [[1.0, 2.0], [3.0, 4.0]],
        "float64 array of 3": np.array([1.0, 2.0, 3.0]),
        "float32 array of 4": np.arange(4, dtype=np.float32),
        "int16 array, 2x2": np.arange(4, dtype=np.int16).reshape(2, 2),
        "3-d list": [[[1.0]]],
        "list of strings": ["a", "b"],
        "ragged list": [[1.0, 2.0], [3.0]],
        "vec3": warp.vec3(1.0, 2.0, 3.0),
    }
    outcomes = {}
    for name, value in values.items():
        outcomes[f"wp.full, {name}"] = outcome(lambda value=value: warp.full(2, value, device="cpu"))
        outcomes[f"wp.full float64, {name}"] = outcome(
            lambda value=value: warp.full(2, value, dtype=warp.float64, device="cpu")
        )
    return outcomes


def kernel_arguments(warp):
    def store(v, m, vectors, matrices):
        vectors[0] = v
        matrices[0] = m

    store.__annotations__ = {  # not strings: Warp 1.2 evaluates none
        "v": warp.vec3,
        "m": warp.mat22,
        "vectors": warp.array(dtype=warp.vec3),
        "matrices": warp.array(dtype=warp.mat22),
    }
    store = warp.kernel(store)
    vectors = {
        "tuple": (1.0, 2.0, 3.0),
        "list of ints": [1, 2, 3],
        "float64 array": np.array([1.0, 2.0, 3.0]),
        "float32 array": np.array([1.0, 2.0, 3.0], dtype=np.float32),
        "wp.vec3": warp.vec3(1.0, 2.0, 3.0),
        "too short": (1.0, 2.0),
    }
    matrices = {
        "nested tuple": ((1.0, 2.0), (3.0, 4.0)),
        "flat list": [1.0, 2.0, 3.0, 4.0],
        "float64 array": np.array([[1.0, 2.0], [3.0, 4.0]]),
        "wp.mat22": warp.mat22(1.0, 2.0, 3.0, 4.0),
    }
    outcomes = {}
    for (vector_name, vector), (matrix_name, matrix) in zip(vectors.items(), [*matrices.items()] * 2):

        def launch(vector=vector, matrix=matrix):
            out = (warp.zeros(1, dtype=warp.vec3, device="cpu"), warp.zeros(1, dtype=warp.mat22, device="cpu"))
            warp.launch(store, dim=1, inputs=[vector, matrix, *out], device="cpu")
            return warp.array(np.concatenate([out[0].numpy().ravel(), out[1].numpy().ravel()]), device="cpu")

        outcomes[f"launch, vector as {vector_name}, matrix as {matrix_name}"] = outcome(launch)
    return outcomes


def run_corpus():
    warp = _warp()
    return {**conversions(warp), **from_numpy(warp), **assignments(warp), **fills(warp), **kernel_arguments(warp)}


def int32_list():
    return _warp().array([1, 2, 3], dtype=_warp().int32, device="cpu")


@GATE.affected_only
def test_needed_an_int32_array_from_a_list_raises_without_gpushim():
    with pytest.raises(RuntimeError, match="Unable to avoid copy"):
        int32_list()


@GATE.affected_only
def test_effective_an_int32_array_from_a_list_holds_its_values_with_gpushim():
    with applied(patch):
        assert int32_list().numpy().tolist() == [1, 2, 3]


@GATE.affected_only
def test_copy_false_still_aliases_numpy_data_that_needs_no_copy():
    source = np.arange(6, dtype=np.float32)
    with applied(patch):
        array = _warp().array(source, dtype=_warp().float32, copy=False, device="cpu")
    assert array.ptr == source.ctypes.data


@GATE.affected_only
def test_numpy_is_changed_for_warps_modules_alone():
    warp = _warp()
    with applied(patch):
        assert warp.types.np is warp.context.np is not np
        assert sys.modules["numpy"] is np and warp.codegen.np is np
        with pytest.raises(ValueError, match="Unable to avoid copy"):
            np.array([1, 2, 3], dtype=np.int32, copy=False)
    assert warp.types.np is warp.context.np is np


@GATE.affected_only
def test_warps_numpy_has_numpys_names_and_copies_only_where_copy_is_false():
    warp = _warp()
    with applied(patch):
        view = warp.types.np
        assert (view.float32, view.ndarray, view.linalg) == (np.float32, np.ndarray, np.linalg)
        assert view.testing is np.testing  # a name NumPy imports when first read
        assert not hasattr(view, "float_")  # removed in NumPy 2, for Warp as for everyone
        with pytest.raises(ValueError, match="Unable to avoid copy"):
            view.asarray([1, 2], dtype=np.int32, copy=False)
        source = np.arange(3)
        assert view.array(source, copy=False) is source
        assert view.array(source) is not source


@GATE.recorded_only
def test_faithful_corpus_matches_the_release_under_numpy_1():
    """Recorded patched under NumPy 2 and unpatched under NumPy 1.26.4; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert outcomes["wp.array, list of ints into int32"]["values"] == [1, 2, 3, 4, 5, 6]
