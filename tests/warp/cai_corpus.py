"""A CUDA Array Interface exporter and CUDA device for the CPU, and the warp.cai_missing_strides corpus.

Nothing here touches memory: Warp's interface path only records the pointer, shape and
strides it is given, so a made-up address and a Device that claims CUDA ordinal 0 take
``wp.array(data=...)`` down the same code a CuPy or torch buffer takes on a GPU.

Where a CUDA device is present (``gpushim.device.cuda_present()``, the question
``tests.gpu.PRESENT`` answers once), the corpus runs on Warp's own ``cuda:0`` over
real device memory instead (:func:`cuda_target`), so that the driver, which may
check a pointer or a device, never answers in place of Warp.  Outcomes record
where an array points relative to the exporter's address, so they are the same
on both.
"""

from __future__ import annotations

import contextlib

from gpushim.device import MADE_UP_ADDRESS

ABSENT = "absent"  # the "strides" key is left out of the interface

DEVICE_BYTES = 4096  # device memory behind the corpus on a GPU: more than any case's extent


def fake_cuda_device():
    """A warp Device that answers is_cuda=True without any CUDA driver."""
    import warp

    device = object.__new__(type(warp.get_device("cpu")))
    device.ordinal = 0
    device.alias = "cuda:0"
    return device


@contextlib.contextmanager
def cuda_target(nbytes=DEVICE_BYTES):
    """Where the corpus's arrays live for a ``with`` block: (Warp device, device address).

    Without a device, the stand-in device and :data:`MADE_UP_ADDRESS`, which nothing
    reads; with one, Warp's ``cuda:0`` and ``nbytes`` of real device memory
    (``gpushim.device.device_memory``, in the primary context Warp uses too).
    """
    import warp

    from gpushim import device as cuda

    if not cuda.cuda_present():
        yield fake_cuda_device(), MADE_UP_ADDRESS
        return
    with cuda.device_memory(nbytes) as address:
        yield warp.get_device("cuda:0"), address


class Exporter:
    """An object exporting a given __cuda_array_interface__ (as a sequence, like CuPy/torch)."""

    def __init__(self, shape, typestr, strides=ABSENT, address=MADE_UP_ADDRESS, **extra):
        desc = {"shape": tuple(shape), "typestr": typestr, "data": (address, False), "version": 3, **extra}
        if strides is not ABSENT:
            desc["strides"] = strides
        self.__cuda_array_interface__ = desc

    def __len__(self):
        return self.__cuda_array_interface__["shape"][0]


def _case(name, typestr, shape, dtype, strides=ABSENT, **kwargs):
    return {"name": name, "typestr": typestr, "shape": shape, "dtype": dtype, "strides": strides, **kwargs}


def _both(name, typestr, shape, dtype, **kwargs):
    """The same case with strides absent and with strides None."""
    return [
        _case(f"{name}/absent", typestr, shape, dtype, ABSENT, **kwargs),
        _case(f"{name}/none", typestr, shape, dtype, None, **kwargs),
    ]


# The three failures the issue names come first.
CASES = [
    *_both("vec3 f4 (5,3)", "<f4", (5, 3), "vec3"),
    *_both("mat22 f4 (4,2,2)", "<f4", (4, 2, 2), "mat22"),
    *_both("vec2d f8 (4,2)", "<f8", (4, 2), "vec2d"),
    # vectors: float16/32/64 and integer typestrs, 1-d to 3-d sources
    *_both("vec4h f2 (3,4)", "<f2", (3, 4), "vec4h"),
    *_both("vec3i i4 (2,3)", "<i4", (2, 3), "vec3i"),
    *_both("vec2b i1 (6,2)", "|i1", (6, 2), "vec2b"),
    *_both("vec2ub u1 (6,2)", "|u1", (6, 2), "vec2ub"),
    *_both("vec4us u2 (2,4)", "<u2", (2, 4), "vec4us"),
    *_both("vec3l i8 (2,3)", "<i8", (2, 3), "vec3l"),
    *_both("vec3 f4 flat (12,)", "<f4", (12,), "vec3"),
    *_both("vec3 f4 (2,6) inner multiple", "<f4", (2, 6), "vec3"),
    *_both("vec3 f4 (2,5,3)", "<f4", (2, 5, 3), "vec3"),
    *_both("vec3 f4 (4,3,1) trailing 1", "<f4", (4, 3, 1), "vec3"),
    *_both("vec3 f4 (4,4) incompatible", "<f4", (4, 4), "vec3"),
    *_both("vec2 f4 (4,) shape=(4,)", "<f4", (4,), "vec2", target_shape=(4,)),
    *_both("vec3 f4 (4,3) shape=(2,2)", "<f4", (4, 3), "vec3", target_shape=(2, 2)),
    # matrices
    *_both("mat33d f8 (2,3,3)", "<f8", (2, 3, 3), "mat33d"),
    *_both("mat22h f2 (3,2,2)", "<f2", (3, 2, 2), "mat22h"),
    *_both("mat44 f4 (2,4,4)", "<f4", (2, 4, 4), "mat44"),
    *_both("mat22 f4 (4,4) inner multiple", "<f4", (4, 4), "mat22"),
    *_both("mat22 f4 flat (8,)", "<f4", (8,), "mat22"),
    *_both("mat22 f4 (3,3) incompatible", "<f4", (3, 3), "mat22"),
    # scalars (1.6.0 already handled these; the patch must not change them)
    *_both("float32 f4 (4,)", "<f4", (4,), "float32"),
    *_both("float64 f8 (2,3)", "<f8", (2, 3), "float64"),
    *_both("float16 f2 (2,3,4)", "<f2", (2, 3, 4), "float16"),
    *_both("int32 i4 (7,)", "<i4", (7,), "int32"),
    *_both("int8 i1 (3,2)", "|i1", (3, 2), "int8"),
    *_both("uint16 u2 (5,)", "<u2", (5,), "uint16"),
    *_both("int64 i8 (2,2,2)", "<i8", (2, 2, 2), "int64"),
    *_both("uint64 u8 (3,)", "<u8", (3,), "uint64"),
    *_both("Any i2 (4,5)", "<i2", (4, 5), "Any"),
    *_both("Any f8 (3,)", "<f8", (3,), "Any"),
    *_both("Any c8 unsupported", "<c8", (3,), "Any"),
    *_both("float32 from f8 (4,)", "<f8", (4,), "float32"),
    *_both("float32 f4 (4,5) shape=(20,)", "<f4", (4, 5), "float32", target_shape=(20,)),
    # explicit strides: contiguous, non-contiguous, a list; the patch leaves these to Warp
    _case("vec3 f4 (4,3) strides contiguous", "<f4", (4, 3), "vec3", (12, 4)),
    _case("vec3 f4 (4,3) rows strided", "<f4", (4, 3), "vec3", (24, 4)),
    _case("vec3 f4 (4,3) inner strided", "<f4", (4, 3), "vec3", (24, 8)),
    _case("mat22 f4 (4,2,2) strides contiguous", "<f4", (4, 2, 2), "mat22", (16, 8, 4)),
    _case("mat22 f4 (4,2,2) transposed inner", "<f4", (4, 2, 2), "mat22", (16, 4, 8)),
    _case("vec2d f8 (4,2) strides list", "<f8", (4, 2), "vec2d", [16, 8]),
    _case("float32 f4 (2,3) transposed", "<f4", (2, 3), "float32", (4, 8)),
    _case("float64 f8 (3,) strides contiguous", "<f8", (3,), "float64", (8,)),
    _case("int16 i2 (2,2,2) strided", "<i2", (2, 2, 2), "int16", (16, 4, 2)),
    # other interface keys ride along untouched
    *_both("vec3 f4 (5,3) stream+mask", "<f4", (5, 3), "vec3", extra={"stream": 1, "mask": None}),
]


def _context():
    """``warp.context``, which Warp 1.10 moved to ``warp._src.context`` (and 1.13 stopped forwarding)."""
    import importlib
    import sys

    return sys.modules.get("warp._src.context") or importlib.import_module("warp.context")


def warp_dtype(name):
    import warp
    import warp.types

    return warp.types.Any if name == "Any" else getattr(warp, name)


def outcome(case, device, address=MADE_UP_ADDRESS):
    """What wp.array(...) makes of one corpus case over ``address``: the array's bookkeeping, or the exception."""
    import warp

    source = Exporter(case["shape"], case["typestr"], case["strides"], address, **case.get("extra", {}))
    try:
        arr = warp.array(data=source, dtype=warp_dtype(case["dtype"]), shape=case.get("target_shape"), device=device)
    except Exception as exc:  # the exception is the outcome
        return {"raises": [type(exc).__name__, str(exc)]}
    return {
        "shape": list(arr.shape),
        "strides": list(arr.strides),
        "dtype": _context().type_str(arr.dtype),
        "ptr - address": arr.ptr - address,
        "size": arr.size,
        "capacity": arr.capacity,
        "is_contiguous": arr.is_contiguous,
        "references": "source" if arr._ref is source else type(arr._ref).__name__,
    }


def run_corpus(cases=CASES):
    """Each case's outcome by name, on a fresh stand-in CUDA device, or on ``cuda:0`` where a device is present."""
    with cuda_target() as (device, address):
        return {case["name"]: outcome(case, device, address) for case in cases}


# The cases NVIDIA/warp#523 is about: vec3, mat22 and vec2d with strides absent or None.
ISSUE_CASES = CASES[:6]
