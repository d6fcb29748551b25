"""Warp 1.6.0 cannot make an array from a CUDA Array Interface that leaves out ``strides``.

What breaks.  In the CUDA Array Interface, ``strides`` is optional: left out
or None, it means the buffer is C-contiguous, and CuPy, Numba and many
hand-written exporters say so for every contiguous array.  Warp 1.6.0 rewrote
``warp.types.array._init_from_data`` to reshape such buffers into vector and
matrix dtypes, and on the way it reads ``strides`` with ``.get`` and indexes
the result to test the inner dimensions, so ``wp.array(buffer,
dtype=wp.vec3)`` raises ``TypeError: 'NoneType' object is not
subscriptable``.  Scalar dtypes never index the strides and work.  1.5.x did
not look at the strides there.

Fixed upstream.  NVIDIA/warp#523, fixed by NVIDIA/warp@77c5644 (in 1.6.1 as
bb7bbe3), which fills missing strides in before it uses them.

How the fix works.  The patch does what 1.6.1 does, from outside Warp: when
the data's interface lacks strides, Warp is handed a stand-in whose interface
is the same dictionary with ``strides`` set to exactly what 1.6.1 computes,
``strides_from_shape(shape, dtype)`` for the dtype Warp is about to use (the
one asked for, or the one the typestr maps to when none is).  That item size
is Warp's dtype's, not the typestr's; the two differ only when Warp keeps the
source's shape under a dtype of another size (four float32 read as four
vec2, say), where 1.6.1's answer is the one kept here (later releases size by
the typestr).  Everything else runs in Warp's own code, so shapes, strides,
errors and their messages are Warp's; afterwards the array references the
original object, as in 1.6.1, so that it keeps the caller's buffer alive.

Not backported.  A 0-d interface (shape ``()``) without strides is left to
1.6.0, which accepts it for scalar dtypes, where 1.6.1 (and 1.5.1) raise
``IndexError`` from ``strides_from_shape(())``: a backport must not turn a
working call into a failing one.  And the same upstream commit also lets an
object with a CUDA Array Interface be read through NumPy when the target
device is the CPU; that is another behaviour change, not this bug.

The probe.  A vec3 array over an interface without strides, compared with
one over the same memory with C-contiguous strides; without a GPU through a
Device object that claims CUDA ordinal 0, so that nothing is read at the
made-up address.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="warp.cai_missing_strides",
    affected=">=1.6.0,<1.6.1",
    fixed_in="1.6.1",
    issue="NVIDIA/warp#523",
    fix="NVIDIA/warp@77c5644 (in 1.6.1 as bb7bbe3)",
    summary="wp.array() from a __cuda_array_interface__ without strides fails for vector and matrix dtypes.",
)

# The parameters of array._init_from_data after self in the releases this patch reads; the
# wrapper hands them back positionally, so a different signature is a TargetMismatch.
_INIT_FROM_DATA = Parameters("data", "dtype", "shape", "device", "copy", "pinned")


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


@patch.applier
def _apply(warp, journal):
    import numpy as np

    types = warp.types
    array = expect(types, "array", type)
    _INIT_FROM_DATA.check(expect(array, "_init_from_data", callable, own=True), method=True)
    strides_from_shape = expect(types, "strides_from_shape", callable)
    np_dtype_to_warp_type = expect(types, "np_dtype_to_warp_type")
    any_dtype = expect(types, "Any")

    def with_strides(data, interface, dtype):
        """A stand-in for ``data``, whose ``interface`` lacks strides, with 1.6.1's; or None to leave it to Warp.

        Anything unexpected (a 0-d or malformed interface, a typestr Warp
        cannot map) returns None, so Warp meets the original object and
        answers as released.
        """
        try:
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
        if kwargs or len(args) != 6:
            try:
                args = _INIT_FROM_DATA.bind(*args, **kwargs)
            except TypeError:
                return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
        data = args[0]
        if not hasattr(data, "__len__"):
            return wrapped(*args)  # Warp rejects it first, naming the original in its message
        try:
            interface = getattr(data, "__cuda_array_interface__", None)
            lacks_strides = isinstance(interface, dict) and interface.get("strides") is None
        except Exception:
            lacks_strides = False  # Warp reads it again and answers as released
        stand_in = with_strides(data, interface, args[1]) if lacks_strides else None
        if stand_in is None:
            return wrapped(*args)
        try:
            return wrapped(stand_in, *args[1:])
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
