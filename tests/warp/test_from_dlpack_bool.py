"""warp.from_dlpack_bool: ``wp.from_dlpack`` of a bool tensor (kDLBool, 8 bits) fails (NVIDIA/warp#1619).

Everything runs on Warp's CPU device.  The corpus is NumPy bool arrays of several
shapes and layouts read with ``dtype=None`` and with explicit dtypes that 1.16.0
accepts (bool, int8, uint8, vectors and matrices of uint8 and int8) or refuses
(float32 and the other scalars, Python types, float vectors and matrices,
quaternions, transforms).  It is recorded patched on the affected releases and
unpatched on 1.16.0, and the matrix compares the two.  Warp's own bool export (from
1.4.0; 1.0 to 1.3 cannot export bool at all, a missing feature, not this bug) is
checked against the NumPy outcome of the same values, on patched releases and on
1.16.0 alike.  Messages that name a Warp class by its module path are recorded with
``warp._src.`` read as ``warp.`` (the module moved in 1.10; the code raising is the same).
"""

from __future__ import annotations

import sys

import pytest
from packaging.version import Version

from gpushim.patches.warp.from_dlpack_bool import patch
from tests.support import applied, gate, record_faithful

GATE = gate(patch)

import numpy as np
import warp

warp.config.quiet = True
warp.init()

FIXED = Version(GATE.release[1]) >= Version(patch.fixed_in)

# Warp's own messages name its classes by module path, which 1.10 moved from warp. to warp._src.
MOVED = "warp._src."
PATTERN = [True, False, True, True, False, False, True, False, False, True, True, True]


def sources() -> dict:
    """NumPy bool arrays by name: contiguous, 0-d, empty, strided, transposed, with inner shapes."""
    flat = np.array(PATTERN)
    return {
        "(3,)": flat[:3].copy(),
        "(12,)": flat.copy(),
        "(2,3)": flat[:6].reshape(2, 3).copy(),
        "()": np.array(True),
        "(0,)": np.zeros(0, dtype=bool),
        "(6,) step 2": flat[::2],
        "(3,2) transposed": flat[:6].reshape(2, 3).T,
        "(4,3)": flat.reshape(4, 3).copy(),
        "(2,5)": np.array(PATTERN[:10]).reshape(2, 5),
        "(3,2,2)": flat.reshape(3, 2, 2).copy(),
    }


def dtypes() -> dict:
    """Requested dtypes by name (None: let Warp decide)."""
    return {
        "None": None,
        "bool": warp.bool,
        "int8": warp.int8,
        "uint8": warp.uint8,
        "float32": warp.float32,
        "float16": warp.float16,
        "float64": warp.float64,
        "int16": warp.int16,
        "int32": warp.int32,
        "uint64": warp.uint64,
        "float (Python)": float,
        "int (Python)": int,
        "vec3ub": warp.vec3ub,
        "vec3b": warp.vec3b,
        "vec2ub": warp.vec2ub,
        "vector(5, uint8)": warp.types.vector(length=5, dtype=warp.uint8),
        "mat22 of uint8": warp.types.matrix(shape=(2, 2), dtype=warp.uint8),
        "vec3": warp.vec3,
        "vector(5, float32)": warp.types.vector(length=5, dtype=warp.float32),
        "mat22": warp.mat22,
        "mat33d": warp.mat33d,
        "quat": warp.quat,
        "transform": warp.transform,
    }


def describe_dtype(dtype) -> str:
    """A release-neutral name: class names and modules of Warp's types differ across releases."""
    scalar = getattr(dtype, "_wp_scalar_type_", None)
    if scalar is None:
        return dtype.__name__
    return f"{dtype._wp_generic_type_str_}{list(dtype._shape_)} of {scalar.__name__}"


def outcome(source, dtype, pointer: int) -> dict:
    """What ``wp.from_dlpack`` makes of one source: the array (and whether it aliases), or the exception."""
    try:
        result = warp.from_dlpack(source, dtype=dtype)
    except Exception as error:  # the exception is the outcome
        return {"raises": [type(error).__name__, str(error).replace(MOVED, "warp.")]}
    return {
        "dtype": describe_dtype(result.dtype),
        "shape": list(result.shape),
        "strides": list(result.strides),
        "values": result.numpy().tolist(),
        "zero_copy": result.ptr == pointer,
    }


def run_corpus() -> dict:
    outcomes = {}
    for source_name, array in sources().items():
        for dtype_name, dtype in dtypes().items():
            outcomes[f"{source_name} as {dtype_name}"] = outcome(array, dtype, array.ctypes.data)
    return outcomes


def released_failure(dtype) -> list[str]:
    """What an affected release raises for a bool tensor, by release (see the patch's docstring)."""
    release = Version(GATE.release[1])
    if dtype is None:
        spelling = "dlpack" if release < Version("1.1.0") else "DLPack"
        return ["RuntimeError", f"Unknown {spelling} datatype (6, 8)"]
    if release < Version("1.4.0"):
        return ["KeyError", "6"]
    return ["RuntimeError", "Unsupported DLPack dtype ('bool', 8)"]


ACCEPTED = {"None": "bool", "bool": "bool", "int8": "int8", "uint8": "uint8"}


@GATE.affected_only
def test_needed_every_bool_source_fails_without_gpushim():
    outcomes = run_corpus()
    for name, result in outcomes.items():
        dtype_name = name.split(" as ")[1]
        expected = released_failure(dtypes()[dtype_name])
        assert result == {"raises": expected}, name


@GATE.affected_only
def test_effective_bool_sources_read_as_bool_int8_uint8(this_patch):
    outcomes = run_corpus()
    for source_name, array in sources().items():
        for dtype_name, dtype in ACCEPTED.items():
            result = outcomes[f"{source_name} as {dtype_name}"]
            if source_name == "()":
                continue  # Warp's own answer on 0-d tensors, whatever the dtype (recorded in the corpus)
            values = array.tolist() if dtype == "bool" else array.astype(np.uint8).tolist()
            assert result["dtype"] == dtype and result["values"] == values, (source_name, dtype_name, result)
            assert result["zero_copy"], (source_name, dtype_name)


@GATE.affected_only
def test_refusals_name_the_requested_dtype_as_the_fixed_release_does(this_patch):
    outcomes = run_corpus()
    assert outcomes["(3,) as float32"] == {
        "raises": ["RuntimeError", "Incompatible data types: DLPack bool8 and Warp float32"]
    }
    assert outcomes["(4,3) as vec3"]["raises"][1] == "Incompatible data types: DLPack bool8 and Warp vec3f"
    assert outcomes["(2,5) as vector(5, float32)"]["raises"][1] == (
        "Incompatible data types: DLPack bool8 and Warp vector(length=5, dtype=float32)"
    )
    assert outcomes["(3,) as float (Python)"]["raises"][1] == "Incompatible data types: DLPack bool8 and Warp float"


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(request):
    """Recorded patched on the affected releases and unpatched on 1.16.0; the matrix compares the files."""
    if GATE.affected:
        request.getfixturevalue("this_patch")
    outcomes = run_corpus()
    record_faithful(patch, outcomes)
    assert outcomes["(3,) as None"]["values"] == [True, False, True]


def warp_bool_sources() -> dict:
    """Warp bool arrays on the CPU, with the NumPy array of the same values and layout."""
    flat = warp.array(PATTERN, dtype=warp.bool, device="cpu")
    grid = warp.array(np.array(PATTERN).reshape(4, 3), dtype=warp.bool, device="cpu")
    return {"(12,)": flat, "(4,3)": grid, "(3,4) transposed": grid.transpose()}


def can_export_bool() -> bool:
    try:
        warp.to_dlpack(warp.zeros(1, dtype=warp.bool, device="cpu"))
    except RuntimeError:
        return False
    return True


@pytest.mark.skipif(not (GATE.affected or FIXED), reason="neither affected nor fixed")
@pytest.mark.skipif(not can_export_bool(), reason=f"warp-lang {GATE.release[1]} cannot export bool (missing feature)")
@pytest.mark.parametrize("way", ["capsule", "array"])
def test_warp_reads_back_its_own_bool_export_as_it_reads_numpy(request, way):
    if GATE.affected:
        request.getfixturevalue("this_patch")
    for source_name, array in warp_bool_sources().items():
        twin = array.numpy()
        for dtype_name in ("None", "bool", "int8", "uint8", "float32", "vec3ub", "vec3"):
            dtype = dtypes()[dtype_name]
            source = warp.to_dlpack(array) if way == "capsule" else array
            exported = outcome(source, dtype, array.ptr)
            assert exported == outcome(twin, dtype, twin.ctypes.data), (source_name, dtype_name, exported)


@GATE.affected_only
def test_fails_open_where_neither_module_layout_is_found(monkeypatch):
    import types

    from gpushim import Journal, TargetMismatch

    for name in ("warp._src.dlpack", "warp.dlpack"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    journal = Journal()
    with pytest.raises(TargetMismatch, match="neither warp._src.dlpack nor warp.dlpack defines"):
        patch.apply(warp, journal)
    assert journal.entries == []


@GATE.unaffected_only
def test_harmless_the_fixed_release_keeps_its_own_functions():
    module = sys.modules["warp._src.dlpack"] if "warp._src.dlpack" in sys.modules else sys.modules["warp.dlpack"]
    before = vars(module)["dtype_from_dlpack"], vars(module)["dtype_is_compatible"]
    with applied(patch):
        assert (vars(module)["dtype_from_dlpack"], vars(module)["dtype_is_compatible"]) == before
