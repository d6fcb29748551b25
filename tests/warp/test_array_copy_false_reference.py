"""warp.array_copy_false_reference: ``wp.array(data, copy=False)`` forgets its source (Warp 1.3.0 to 1.3.2).

Everything runs on the CPU.  Each corpus case builds a Warp array from a source
with ``copy=False`` (NumPy arrays of many dtypes, shapes and layouts, a list, a
dtype Warp must convert to, ``copy=True`` for contrast, and a
``__cuda_array_interface__`` on a stand-in CUDA device, see tests/warp/cai_corpus.py)
and records what the array holds in ``_ref``, whether it aliases the source, its
values, and the source's lifetime from a ``weakref.finalize``: freed while the Warp
array lives, and freed once it is gone.  Values are read before the source is
dropped, so the unpatched runs never read freed memory.
"""

from __future__ import annotations

import gc
import weakref

from gpushim.patches.warp.array_copy_false_reference import patch
from tests.support import gate, record_faithful

GATE = gate(patch)

import numpy as np
import warp

from tests.warp import cai_corpus

warp.config.quiet = True
warp.init()


def numbers(shape, dtype, order="C"):
    size = int(np.prod(shape))
    return np.asarray(np.arange(1, size + 1).reshape(shape), dtype=dtype, order=order)


def cases() -> dict:
    """Name -> (make the source, keyword arguments of wp.array besides data and device)."""
    found = {}
    for np_dtype, wp_name in [
        ("float32", "float32"), ("float64", "float64"), ("float16", "float16"),
        ("int8", "int8"), ("uint8", "uint8"), ("int16", "int16"), ("uint16", "uint16"),
        ("int32", "int32"), ("uint32", "uint32"), ("int64", "int64"), ("uint64", "uint64"),
    ]:  # fmt: skip
        for shape in [(5,), (2, 3), (2, 3, 4)]:
            found[f"{np_dtype} {shape}"] = (
                lambda d=np_dtype, s=shape: numbers(s, d),
                {"dtype": getattr(warp, wp_name)},
            )
    found.update(
        {
            "bool (4,)": (lambda: np.array([True, False, True, True]), {"dtype": warp.bool}),
            "float32 0-d": (lambda: np.array(1.5, dtype=np.float32), {"dtype": warp.float32}),
            "float32 (0,)": (lambda: np.zeros(0, dtype=np.float32), {"dtype": warp.float32}),
            "float32 (8,) step 2": (lambda: numbers((8,), "float32")[::2], {"dtype": warp.float32}),
            "float32 (3,2) transposed": (lambda: numbers((2, 3), "float32").T, {"dtype": warp.float32}),
            "float64 (3,4) Fortran order": (lambda: numbers((3, 4), "float64", order="F"), {"dtype": warp.float64}),
            "float32 (4,) dtype inferred": (lambda: numbers((4,), "float32"), {}),
            "float32 (12,) shape=(3,4)": (lambda: numbers((12,), "float32"), {"dtype": warp.float32, "shape": (3, 4)}),
            "vec3 from (4,3)": (lambda: numbers((4, 3), "float32"), {"dtype": warp.vec3}),
            "vec3 from flat (12,)": (lambda: numbers((12,), "float32"), {"dtype": warp.vec3}),
            "vec3 from (4,3,1)": (lambda: numbers((4, 3, 1), "float32"), {"dtype": warp.vec3}),
            "vec2d from (3,2)": (lambda: numbers((3, 2), "float64"), {"dtype": warp.vec2d}),
            "mat22 from (3,2,2)": (lambda: numbers((3, 2, 2), "float32"), {"dtype": warp.mat22}),
            "vec3 from (3,4) transposed": (lambda: numbers((3, 4), "float32").T, {"dtype": warp.vec3}),
            "int64 source as int32": (lambda: numbers((4,), "int64"), {"dtype": warp.int32}),
            "float64 source as float32": (lambda: numbers((2, 2), "float64"), {"dtype": warp.float32}),
            "list of floats": (lambda: [1.0, 2.0, 3.0], {"dtype": warp.float32}),
            "float32 (5,) copy=True": (lambda: numbers((5,), "float32"), {"dtype": warp.float32, "copy": True}),
        }
    )
    return found


def pointer(source) -> int | None:
    return source.ctypes.data if isinstance(source, np.ndarray) else None


def held(reference, source) -> str:
    if reference is source:
        return "source"
    if isinstance(reference, np.ndarray) and isinstance(source, np.ndarray) and reference.base is source:
        return "view of source"
    return type(reference).__name__


def watched(make, build) -> dict:
    """Build a Warp array from a fresh source, and follow the source's lifetime around it."""
    source = make()
    freed = []
    if not isinstance(source, list):  # a list cannot be watched; Warp never aliases one
        weakref.finalize(source, freed.append, True)
    try:
        result = build(source)
    except Exception as error:  # the exception is the outcome
        return {"raises": [type(error).__name__, str(error)]}
    outcome = {
        "references": held(result._ref, source),
        "aliases source": result.ptr == pointer(source),
        "shape": list(result.shape),
        "strides": list(result.strides),
        "dtype": warp.types.type_repr(result.dtype) if result.device.is_cpu else None,
        "values": result.numpy().tolist() if result.device.is_cpu else None,
    }
    del source
    gc.collect(0)
    outcome["source freed while the array lives"] = bool(freed)
    del result
    gc.collect(0)
    outcome["source freed after the array"] = bool(freed)
    return outcome


# Interfaces over device memory (shape, typestr, Warp dtype): the stand-in device without a GPU, cuda:0 with one.
INTERFACES = [((5,), "<f4", warp.float32), ((4, 3), "<f4", warp.vec3), ((2, 3), "<i8", warp.int64)]


def run_corpus() -> dict:
    outcomes = {}
    for name, (make, options) in cases().items():
        options = {"copy": False, **options}
        outcomes[name] = watched(make, lambda source, o=options: warp.array(source, device="cpu", **o))
    with cai_corpus.cuda_target() as (device, address):
        for shape, typestr, dtype in INTERFACES:
            outcomes[f"CUDA array interface {typestr} {shape}"] = watched(
                lambda s=shape, t=typestr: cai_corpus.Exporter(s, t, strides=None, address=address),
                lambda source, d=dtype: warp.array(data=source, dtype=d, device=device, copy=False),
            )
    return outcomes


ALIASED = {"source", "view of source"}


@GATE.affected_only
def test_needed_aliased_sources_are_forgotten_and_freed_without_gpushim():
    for name, outcome in run_corpus().items():
        assert outcome["references"] == "NoneType", name
        if outcome["aliases source"] or name.startswith("CUDA"):
            assert outcome["source freed while the array lives"], name


@GATE.affected_only
def test_effective_aliased_sources_stay_alive_while_the_array_lives(this_patch):
    outcomes = run_corpus()
    for name, outcome in outcomes.items():
        if outcome["aliases source"] or name.startswith("CUDA"):
            assert outcome["references"] in ALIASED, name
            assert not outcome["source freed while the array lives"], name
            assert outcome["source freed after the array"], name
    assert outcomes["float32 (5,)"]["references"] == "source"
    assert outcomes["vec3 from flat (12,)"]["references"] == "view of source"
    assert outcomes["float32 (5,) copy=True"]["references"] == "NoneType"


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(request):
    """Recorded patched on 1.3.0 to 1.3.2 and unpatched on 1.3.3; the matrix compares the files."""
    if GATE.affected:
        request.getfixturevalue("this_patch")
    outcomes = run_corpus()
    record_faithful(patch, outcomes)
    assert outcomes["float32 (5,)"]["source freed while the array lives"] is False


@GATE.affected_only
def test_the_note_left_between_the_two_wrappers_is_removed(this_patch):
    result = warp.array(np.ones(3, dtype=np.float32), dtype=warp.float32, device="cpu", copy=False)
    assert not any(name.startswith("_gpushim") for name in vars(result))
