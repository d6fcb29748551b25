"""Warp 1.6.0 cannot make an array from a CUDA Array Interface that leaves out ``strides``.

In the CUDA Array Interface, ``strides`` is optional: left out or None, it means the
buffer is C-contiguous, and CuPy, Numba and many hand-written exporters say so for
every contiguous array.  Warp 1.6.0 rewrote ``warp.types.array._init_from_data`` to
reshape such buffers into vector and matrix dtypes, and on the way it reads
``strides`` with ``.get`` and indexes the result to test the inner dimensions, so
``wp.array(buffer, dtype=wp.vec3)`` raises ``TypeError: 'NoneType' object is not
subscriptable`` (NVIDIA/warp#523).  Scalar dtypes never index the strides and work.
1.5.x did not look at the strides there; 1.6.1 fills missing strides in before it
uses them.

The fix does what 1.6.1 does, from outside Warp: when the data's interface lacks
strides, Warp is handed a stand-in whose interface is the same dictionary with
``strides`` set to exactly what 1.6.1 computes, ``strides_from_shape(shape, dtype)``
for the dtype Warp is about to use (the one asked for, or the one the typestr maps
to when none is).  That item size is Warp's dtype's, not the typestr's; the two
differ only when Warp keeps the source's shape under a dtype of another size (four
float32 read as four vec2, say), where 1.6.1's answer is the one kept here (later
releases size by the typestr).  Everything else runs in Warp's own code, so
shapes, strides, errors and their messages are Warp's; afterwards the array
references the original object, as in 1.6.1, so that it keeps the caller's buffer
alive.

Two deliberate limits.  A 0-d interface (shape ``()``) without strides is left to
1.6.0, which accepts it for scalar dtypes, where 1.6.1 (and 1.5.1) raise
``IndexError`` from ``strides_from_shape(())``: a backport must not turn a working
call into a failing one.  And the same upstream commit also lets an object with a
CUDA Array Interface be read through NumPy when the target device is the CPU;
that is another behaviour change, not this bug, and is not backported here.
"""

from __future__ import annotations

from gpushim import Patch

patch = Patch(
    id="warp.cai_missing_strides",
    affected=">=1.6.0,<1.6.1",
    fixed_in="1.6.1",
    issue="NVIDIA/warp#523",
    fix="NVIDIA/warp@77c5644 (in 1.6.1 as bb7bbe3)",
    summary="wp.array() from a __cuda_array_interface__ without strides fails for vector and matrix dtypes.",
)

# The parameters of array._init_from_data in the releases this patch reads; the
# wrapper hands them back positionally, so a different signature is a TargetMismatch.
_PARAMETERS = ("self", "data", "dtype", "shape", "device", "copy", "pinned")


class _StridedInterface:
    """The caller's data, seen through an interface that states its strides.

    Warp's interface path asks the data for ``__len__`` (presence only) and for
    ``__cuda_array_interface__``, and keeps the data itself as the array's
    ``_ref``; the wrapper puts the original back there.  Any other attribute is
    the original's.
    """

    __slots__ = ("_source", "__cuda_array_interface__")

    def __init__(self, source: object, interface: dict) -> None:
        self._source = source
        self.__cuda_array_interface__ = interface

    def __len__(self) -> int:
        return len(self._source)

    def __getattr__(self, name: str) -> object:
        return getattr(self._source, name)


def _split(data, dtype, shape, device, copy, pinned):
    """``_init_from_data``'s arguments (past ``self``) as the data and the rest, in order."""
    return data, (dtype, shape, device, copy, pinned)


@patch.applier
def _apply(warp, journal):
    import inspect

    import numpy as np

    from gpushim import TargetMismatch

    types = warp.types
    array = types.array
    for name in ("strides_from_shape", "np_dtype_to_warp_type", "Any"):
        if not hasattr(types, name):
            raise TargetMismatch(f"warp.types has no {name}")
    parameters = tuple(inspect.signature(vars(array)["_init_from_data"]).parameters)
    if parameters != _PARAMETERS:
        raise TargetMismatch(f"warp.types.array._init_from_data takes {parameters}, expected {_PARAMETERS}")

    strides_from_shape = types.strides_from_shape
    np_dtype_to_warp_type = types.np_dtype_to_warp_type
    any_dtype = types.Any

    def with_strides(data, dtype):
        """A stand-in for ``data`` with 1.6.1's strides, or None to leave ``data`` to Warp.

        Anything unexpected (no interface, strides given, a 0-d or malformed
        interface, a typestr Warp cannot map) returns None, so Warp meets the
        original object and answers as released.
        """
        if not hasattr(data, "__len__"):
            return None  # Warp rejects it first, naming the original in its message
        try:
            interface = data.__cuda_array_interface__
            if not isinstance(interface, dict) or interface.get("strides") is not None:
                return None
            shape = interface.get("shape")
            if len(shape) == 0:
                return None
            if dtype == any_dtype:
                dtype = np_dtype_to_warp_type[np.dtype(interface.get("typestr"))]
            strides = strides_from_shape(shape, dtype)
        except Exception:
            return None
        return _StridedInterface(data, {**interface, "strides": strides})

    def init_from_data(wrapped, instance, args, kwargs):
        try:
            data, rest = _split(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
        stand_in = with_strides(data, rest[0])
        if stand_in is None:
            return wrapped(*args, **kwargs)
        try:
            return wrapped(stand_in, *rest)
        finally:
            if getattr(instance, "_ref", None) is stand_in:
                instance._ref = data

    journal.wrap(array, "_init_from_data", init_from_data)


@patch.prober
def _probe():
    """A vec3 array over an interface without strides must equal one with C-contiguous strides.

    Comparing with the explicit strides, not with fixed numbers, keeps the probe
    to this bug: 1.5.1 builds such arrays differently (shape (4, 3)) but the same
    way with and without strides.  Warp's interface path only records pointer,
    shape and strides, so without a GPU a Device object that claims CUDA ordinal
    0 reaches it, and nothing is read at the made-up address; where a device is
    present, Warp's own ``cuda:0`` and real device memory are used instead, so
    that no check of the pointer or the device can stand in for the bug
    (gpushim.device).
    """
    import warp

    from gpushim import device as cuda

    warp.config.quiet = True
    if cuda.cuda_present():
        device = warp.get_device("cuda:0")
    else:
        device = object.__new__(type(warp.get_device("cpu")))
        device.ordinal = 0
        device.alias = "cuda:0"

    class Exporter:
        def __init__(self, data, **strides):
            self.__cuda_array_interface__ = {
                "shape": (4, 3),
                "typestr": "<f4",
                "data": (data, False),
                "version": 3,
                **strides,
            }

        def __len__(self):
            return 4

    with cuda.device_memory(48) as data:
        expected = warp.array(data=Exporter(data, strides=(12, 4)), dtype=warp.vec3, device=device)
        try:
            result = warp.array(data=Exporter(data), dtype=warp.vec3, device=device)
        except TypeError as error:
            return f"wp.array(dtype=wp.vec3) over an interface without strides raises TypeError: {error}"
    if (result.shape, result.strides, result.ptr) != (expected.shape, expected.strides, expected.ptr):
        return (
            f"wp.array(dtype=wp.vec3) without strides gives shape {result.shape}, strides {result.strides}; "
            f"with C-contiguous strides, shape {expected.shape}, strides {expected.strides}"
        )
    return None
