"""Warp 1.x before 1.16.0 cannot import a bool tensor through DLPack.

What breaks.  DLPack marks bool tensors with type code ``kDLBool`` (6) and 8
bits, as NumPy, torch, CuPy, JAX and Warp itself (from 1.4.0) export them.  No
Warp release from 1.0.0 to 1.15.0 has a branch for that code in its import:
``wp.from_dlpack`` of a bool tensor raises ``RuntimeError: Unknown DLPack
datatype (6, 8)``, and with an explicit ``dtype`` it raises ``RuntimeError:
Unsupported DLPack dtype ('bool', 8)`` (1.4.0 on) or ``KeyError: 6`` (1.0 to
1.3, whose ``DLDataTypeCode`` cannot even name the code).  From 1.4.0 Warp
cannot read back its own bool export.

Fixed upstream.  NVIDIA/warp#1619, fixed by NVIDIA/warp@5c79cc8 (1.16.0),
which maps kDLBool/8 to ``wp.bool`` and accepts it for ``dtype=wp.bool``,
``wp.int8`` and ``wp.uint8``, as its torch and Paddle converters already did;
any other kDLBool width, and any other requested dtype, is "incompatible".

How the fix works.  Warp's import (``_from_dlpack`` up to 1.12,
``_unpack_array`` from 1.13) decides the dtype through two functions of its
DLPack module, ``dtype_from_dlpack`` and ``dtype_is_compatible``, read as
module globals at each call.  That module is ``warp.dlpack`` up to 1.9 and
``warp._src.dlpack`` from 1.10 (1.10 to 1.12 keep ``warp.dlpack`` as a
forwarding stub only); a release with neither, or whose import does not call
these functions with the dtype it was asked for, ends ``failed`` and Warp
works as released.  The patch wraps both functions.  A kDLBool dtype is
answered as 1.16.0 answers it; every other dtype goes to Warp's own function,
untouched, after one comparison.

1.16.0 words the refusal anew: ``Incompatible data types: DLPack bool8 and
Warp float32``.  The old import would format the same refusal with the repr
of a ctypes object (its address changes from run to run), so for bool tensors
``dtype_is_compatible`` raises 1.16.0's message itself.  It names the dtype
the import was asked for (a vector type, say, where ``dtype_is_compatible``
only sees its scalar): the import is wrapped too, binding its call as Warp
binds it and holding its ``dtype`` in a context variable while it runs.  The
dtype is named as 1.16.0's ``type_repr`` names Warp's scalar, vector, matrix,
quaternion and transform types and Python's ``bool``, ``float`` and ``int``,
which releases before 1.13 name otherwise; another dtype (a struct, a NumPy
type) is named by the release's own ``type_repr``, which is 1.16.0's there.

Not backported.  1.16.0's new wording of the "incompatible" error for
non-bool tensors (a cosmetic change to a path that works), and bool export
where a release lacks it (1.0 to 1.3: a missing feature, not this bug).

The probe.  ``wp.from_dlpack`` of a NumPy bool array on the CPU, which must
give a ``wp.bool`` array with its values.
"""

from __future__ import annotations

import contextvars

from gpushim import Parameters, Patch, TargetMismatch, expect

patch = Patch(
    id="warp.from_dlpack_bool",
    affected=">=1.0.0,<1.16.0",
    fixed_in="1.16.0",
    issue="NVIDIA/warp#1619",
    fix="NVIDIA/warp@5c79cc8",
    summary="wp.from_dlpack raises on bool tensors (kDLBool): 'Unknown DLPack datatype (6, 8)'.",
)

KDL_BOOL = 6  # the DLPack type code; DLDataTypeCode lacks the name before Warp 1.4

# Warp's import of a tensor, by release: 1.13 on, then up to 1.12; both take the dtype asked for second.
_IMPORTS = {"_unpack_array": Parameters("dlt", dtype=None), "_from_dlpack": Parameters("capsule", dtype=None)}

# The dtype the import in progress was asked for, which dtype_is_compatible names in its refusal.
_requested_dtype = contextvars.ContextVar("gpushim_warp_requested_dtype", default=None)

# 1.16.0's scalar_short_name, by the name of the Warp scalar type.
_SHORT_NAMES = {
    "float16": "h", "bfloat16": "bf", "float32": "f", "float64": "d",
    "int8": "b", "int16": "s", "int32": "i", "int64": "l",
    "uint8": "ub", "uint16": "us", "uint32": "ui", "uint64": "ul",
}  # fmt: skip

# How 1.16.0's type_repr spells each kind of composite type, by its _wp_generic_type_str_.
_COMPOSITES = {"transform_t": "transform", "quat_t": "quat", "vec_t": "vec", "mat_t": "mat"}


def _dlpack_import():
    """The loaded module that holds Warp's DLPack import, the name of the import, and its parameters."""
    import sys

    for name in ("warp._src.dlpack", "warp.dlpack"):
        module = sys.modules.get(name)
        namespace = vars(module) if module is not None else {}
        if callable(namespace.get("dtype_from_dlpack")) and callable(namespace.get("dtype_is_compatible")):
            break
    else:
        raise TargetMismatch(
            "neither warp._src.dlpack nor warp.dlpack defines dtype_from_dlpack and dtype_is_compatible"
        )
    for caller, parameters in _IMPORTS.items():
        code = getattr(namespace.get(caller), "__code__", None)
        if code is not None and {"dtype_from_dlpack", "dtype_is_compatible"} <= set(code.co_names):
            parameters.check(namespace[caller])
            return module, caller, parameters
    raise TargetMismatch(
        f"{name} has no _unpack_array or _from_dlpack that reads dtype_from_dlpack and dtype_is_compatible"
    )


@patch.applier
def _apply(warp, journal):
    import sys

    module, caller, parameters = _dlpack_import()
    types = sys.modules.get(module.__name__.replace("dlpack", "types"))
    scalar_types, type_repr = expect(types, "scalar_types"), expect(types, "type_repr", callable)
    bool_aliases = (warp.bool, warp.int8, warp.uint8)

    def type_name(dtype) -> str:
        """1.16.0's ``type_repr`` of ``dtype`` for Warp's value types and Python's; the release's own for the rest."""
        scalar = getattr(dtype, "_wp_scalar_type_", None)
        kind = _COMPOSITES.get(getattr(dtype, "_wp_generic_type_str_", None))
        if scalar is None or kind is None:
            if dtype in scalar_types or dtype is bool or dtype is float or dtype is int:
                return dtype.__name__
            return type_repr(dtype)
        short = _SHORT_NAMES.get(scalar.__name__) if scalar in scalar_types else None
        shape = dtype._shape_
        if kind in ("transform", "quat"):
            return f"{kind}{short}" if short else f"{kind}(dtype={type_name(scalar)})"
        if kind == "vec":
            if short and shape[0] <= 4:
                return f"vec{shape[0]}{short}"
            return f"vector(length={shape[0]}, dtype={type_name(scalar)})"
        if short and shape[0] <= 4 and shape[1] <= 4:
            return f"mat{shape[0]}{shape[1]}{short}"
        return f"matrix(shape=({shape[0]}, {shape[1]}), dtype={type_name(scalar)})"

    def import_tensor(wrapped, instance, args, kwargs):
        try:
            _, dtype = parameters.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
        token = _requested_dtype.set(dtype)
        try:
            return wrapped(*args, **kwargs)
        finally:
            _requested_dtype.reset(token)

    def dtype_from_dlpack(wrapped, instance, args, kwargs):
        if len(args) == 1 and not kwargs and args[0].bits == 8 and args[0].type_code.value == KDL_BOOL:
            return warp.bool
        return wrapped(*args, **kwargs)

    def dtype_is_compatible(wrapped, instance, args, kwargs):
        if len(args) != 2 or kwargs:
            return wrapped(*args, **kwargs)
        dl_dtype, wp_dtype = args
        if dl_dtype.type_code.value != KDL_BOOL or dl_dtype.bits % 8:
            return wrapped(dl_dtype, wp_dtype)
        if dl_dtype.bits == 8 and wp_dtype in bool_aliases:
            return True
        requested = _requested_dtype.get()
        lanes = f"x{dl_dtype.lanes}" if dl_dtype.lanes > 1 else ""
        raise RuntimeError(
            f"Incompatible data types: DLPack bool{dl_dtype.bits}{lanes} "
            f"and Warp {type_name(wp_dtype if requested is None else requested)}"
        )

    journal.wrap(module, "dtype_from_dlpack", dtype_from_dlpack)
    journal.wrap(module, "dtype_is_compatible", dtype_is_compatible)
    journal.wrap(module, caller, import_tensor)


@patch.prober
def _probe():
    """``wp.from_dlpack`` of a NumPy bool array on the CPU must give a ``wp.bool`` array with its values."""
    import numpy as np
    import warp

    warp.config.quiet = True
    warp.init()
    source = np.array([True, False, True])
    try:
        result = warp.from_dlpack(source)
    except (RuntimeError, KeyError) as error:
        return f"wp.from_dlpack of a NumPy bool array raises {type(error).__name__}: {error}"
    if result.dtype is not warp.bool or result.numpy().tolist() != [True, False, True]:
        return f"wp.from_dlpack of a NumPy bool array gives dtype {result.dtype}, values {result.numpy().tolist()}"
    return None
