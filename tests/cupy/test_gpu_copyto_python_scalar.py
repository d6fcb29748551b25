"""cupy.copyto_python_scalar on a CUDA device: the reproducer of cupy/cupy#8391 filled and read back.

cupy/cupy#8391, "`cp.full` with `np.nan` broken" (duplicate cupy/cupy#8393),
reported on CuPy 13.2.0 with NumPy 2.0.0, reads:

    import numpy as np, cupy as cp

    out = cp.full((2, 2), np.nan)

and NumPy 2's ``TypeError: can_cast() does not support Python ints, floats,
and complex ...``.  The tests marked ``gpu`` run it as written, without
gpushim on affected installs (it must raise) and with it (it must give
NumPy's array), then the other fills of 13.2.0's source with Python scalars
(``cupy.full``, ``cupy.full_like``, ``cupy.copyto`` with ``where``,
``cupy.select``'s default, ``cupy.unwrap``) on real device memory with the
real copy kernel, each against what NumPy gives for the same call: 13.3.0
leaves the cast decision to NumPy, so a patched 13.2.0 must raise where NumPy
raises and write what NumPy writes.  The grid leaves out what NumPy and CUDA
define differently and the fix does not decide (NaN or infinity into an
integer, a complex value into a real array).  Without a device they are
skipped with "no CUDA device" (tests/gpu.py), and none of them has run yet.
The last test runs on the CPU: it takes the probe's device branch by
pretending a driver.
"""

from __future__ import annotations

import math

import numpy
import pytest

from gpushim.patches.cupy.copyto_python_scalar import patch
from tests.gpu import on_gpu, pretend_a_device
from tests.support import gate

GATE = gate(patch)
NEEDS_FIX = GATE.affected  # the release and NumPy 2 (only_with)
CAN_CAST_REFUSAL = "can_cast() does not support Python ints, floats, and complex"

VALUES = [True, 0, -1, 7, 300, 1.5, -0.25, math.nan, math.inf, 1.5 + 2j]
DTYPES = "?BbhifdFD"


def defined_alike(value, code: str) -> bool:
    """Whether NumPy and a CUDA kernel write the same thing for ``value`` cast into ``code``."""
    kind = numpy.dtype(code).kind
    if isinstance(value, complex):
        return kind == "c"
    if isinstance(value, float) and not math.isfinite(value):
        return kind in "fc"
    return True


def fills():
    """``{case: fill(xp)}``: each fill of an array with a Python scalar, for ``xp`` NumPy or CuPy."""
    cases = {"cupy/cupy#8391: full((2, 2), np.nan)": lambda xp: xp.full((2, 2), math.nan)}
    for value in VALUES:
        for code in DTYPES:
            if not defined_alike(value, code):
                continue
            name = f"{value!r} -> {numpy.dtype(code).name}"
            cases[f"full {name}"] = lambda xp, v=value, c=code: xp.full((2, 3), v, dtype=c)
            cases[f"full_like {name}"] = lambda xp, v=value, c=code: xp.full_like(xp.empty((4,), c), v)
            cases[f"copyto where {name}"] = lambda xp, v=value, c=code: copy_where(xp, v, c)
    for value in (True, -1, 1.5, math.nan, math.inf):
        cases[f"select default {value!r}"] = lambda xp, v=value: xp.select(
            [xp.asarray([True, False, False]), xp.asarray([False, True, False])],
            [xp.asarray([1.0, 2.0, 3.0]), xp.asarray([4.0, 5.0, 6.0])],
            default=v,
        )
    phases = [0.0, 3.0, 6.5, -2.0, 9.0, 2.5]
    cases["unwrap float64"] = lambda xp: xp.unwrap(xp.asarray(phases))
    cases["unwrap float64 period=360"] = lambda xp: xp.unwrap(xp.asarray(phases) * 60, period=360)
    cases["unwrap int64 period=7"] = lambda xp: xp.unwrap(xp.asarray([0, 5, 11, -3, 20, 4]), period=7)
    cases["unwrap int64 period=6"] = lambda xp: xp.unwrap(xp.asarray([0, 5, 11, -3, 20, 4]), period=6)
    return cases


def copy_where(xp, value, code):
    array = xp.arange(6).reshape(2, 3).astype(code)
    xp.copyto(array, value, where=xp.asarray([True, False, True]))
    return array


def outcome(fill, xp):
    """The array ``fill(xp)`` gives, on the host, or its error as ``"Type: message"``."""
    try:
        array = fill(xp)
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return array if xp is numpy else array.get()


def same(mine, numpys) -> bool:
    if isinstance(mine, str) or isinstance(numpys, str):
        return mine == numpys
    return mine.dtype == numpys.dtype and numpy.array_equal(mine, numpys, equal_nan=mine.dtype.kind in "fc")


@on_gpu
@GATE.affected_only
def test_needed_the_reproducer_raises_without_gpushim():
    import cupy as cp

    with pytest.raises(TypeError, match=r"can_cast\(\) does not support Python ints"):
        cp.full((2, 2), numpy.nan)


@on_gpu
@GATE.recorded_only
def test_reproducer_gives_numpys_array(gpushim_patched):
    import cupy as cp

    out = cp.full((2, 2), numpy.nan)
    assert out.dtype == numpy.float64 and out.shape == (2, 2)
    assert numpy.isnan(out.get()).all()


@on_gpu
@GATE.recorded_only
def test_fills_write_or_refuse_what_numpy_does(gpushim_patched):
    import cupy

    outcomes = {case: (outcome(fill, cupy), outcome(fill, numpy)) for case, fill in fills().items()}
    differing = {case: pair for case, pair in outcomes.items() if not same(*pair)}
    assert not differing, differing


def test_probe_keeps_cupys_allocator_and_kernel_where_a_device_is_present(monkeypatch):
    """On the CPU, with a pretended driver: the probe fills with CuPy's own allocator and copy kernel.

    An allocator that hands out untouched memory and a recording kernel
    stand in, for this test, for the device's memory pool and CuPy's kernel;
    the probe must leave both in place and reach the kernel where the
    install has no bug.
    """
    import cupy

    from tests.cupy.fusion_tracing import untouched_allocator

    pretend_a_device(monkeypatch)
    calls = []

    def device_kernel(*args, **kwargs):
        calls.append([type(argument).__name__ for argument in args])

    monkeypatch.setattr(cupy._core, "elementwise_copy", device_kernel)
    with untouched_allocator() as device_pool:
        verdict = patch.probe()
        assert cupy.cuda.get_allocator() is device_pool
        assert cupy._core.elementwise_copy is device_kernel
    if NEEDS_FIX:
        assert verdict.startswith(f"cupy.full((3,), 2.5) raises TypeError: {CAN_CAST_REFUSAL}"), verdict
        assert calls == []
    else:
        assert verdict is None
        assert calls == [["float", "ndarray"]]
