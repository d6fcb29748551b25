"""``Generator.random`` and ``uniform`` with a dtype other than float64 or float32 write past their output.

What breaks.  ``cupy.random.Generator.random(size, dtype)`` and
``uniform(low, high, size, dtype)`` allocate their output in the dtype asked
for, then fill it with cuRAND's float64 kernel where that dtype is float64
and with its float32 kernel for every other dtype.  For float16, the dtype
the method was written to accept beside the two, the kernel writes four bytes
into each element of two: ``default_rng().random(1000, dtype=numpy.float16)``
gets a 2,000-byte buffer and 4,000 bytes written to it, over whatever the
memory pool put after it, and the values it returns are the halves of float32
bit patterns (above 1, negative, NaN), not numbers in ``[0, 1)``.  A dtype
that is not a float (int32) gets float32 bit patterns read as integers.
CuPy 13.0.0 to 13.3.0 do this, with every NumPy.

Fixed upstream.  cupy/cupy#8538, backported as #8658, released in 13.4.0:
``git tag --contains 5faab1135`` (the merge of #8658) starts at v13.4.0.  The
float32 kernel came with 671b01087 ("Fix random module performance
regression"), first in v13.0.0 (``git tag --contains``); 12.x fills through
float64 only.

How the fix works.  13.4.0 fills a float32 array for every dtype but float64
and returns it cast to the dtype asked for (for ``random`` with ``out``,
copied into ``out`` first); for ``uniform`` the cast comes after ``low +
(high - low) * y``, computed from that float32 array.  The patch wraps the two
methods of ``Generator`` (a Python class compiled by Cython, whose attributes
can be bound).  A call with float64 or float32, or one that does not bind,
goes to the release, which does there what 13.4.0 does.  For any other
dtype the wrapper takes 13.4.0's steps in 13.4.0's order (a dtype NumPy
cannot read raises where 13.4.0 reads it: after ``random`` checked ``out``,
after ``uniform`` broadcast its bounds): ``random`` asks the release for
float32 samples and casts them, and ``uniform`` computes from float32
samples of the release's ``random``: the same kernel, on the same number of
elements, so the generator's state advances as in 13.4.0.  Before wrapping,
the patch checks both methods' parameters and ``_check_output_array``.

Not backported.  13.4.0's new tests.

The probe.  ``Generator.random(1000, dtype=numpy.float16)``.  With a
device, on ``default_rng(0)``: every sample must lie in ``[0, 1)``.  Without
one, the generator's state is a stand-in address nobody reads and the
arrays get memory nobody touches (the launch fails without a driver, and
CuPy does not check it): the first allocation must be 4,000 bytes, the
float32 array the kernel fills.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect
from gpushim.patches.cupy._memory import untouched_memory

patch = Patch(
    id="cupy.generator_float_dtype",
    affected=">=13.0.0,<13.4.0",
    fixed_in="13.4.0",
    issue="cupy/cupy#8538",
    fix="cupy/cupy#8538 (backport #8658)",
    summary="Generator.random and Generator.uniform with dtype=float16 write float32 samples into a float16 buffer.",
    module="cupy.random._generator_api",
)

# The dtypes whose kernel the release picks right, float64's and float32's, where it is 13.4.0 to the letter.
_RIGHT = ("d", "f")


def _dtype_char(numpy, dtype):
    """The dtype's character, or None where NumPy cannot read it."""
    try:
        return numpy.dtype(dtype).char
    except Exception:
        return None


def _fixed(numpy, cupy, released_random):
    """The wrappers of ``random`` and ``uniform``: 13.4.0's float32 samples, cast to the dtype asked for."""
    random_parameters = Parameters(size=None, dtype=numpy.float64, out=None)
    uniform_parameters = Parameters(low=0.0, high=1.0, size=None, dtype=numpy.float64)

    def random(wrapped, instance, args, kwargs):
        try:
            size, dtype, out = random_parameters.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)
        if _dtype_char(numpy, dtype) in _RIGHT:
            return wrapped(*args, **kwargs)
        if out is not None:
            instance._check_output_array(dtype, size, out)
        numpy.dtype(dtype)  # a dtype NumPy cannot read raises here, as in 13.4.0
        samples = wrapped(size, numpy.float32)
        if out is not None:
            cupy._core.elementwise_copy(samples, out)
            samples = out
        return samples.astype(dtype, copy=False)

    def uniform(wrapped, instance, args, kwargs):
        try:
            low, high, size, dtype = uniform_parameters.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)
        if _dtype_char(numpy, dtype) in _RIGHT:
            return wrapped(*args, **kwargs)
        low, high = cupy.asarray(low), cupy.asarray(high)
        if size is None:
            size = cupy.broadcast(low, high).shape
        numpy.dtype(dtype)
        samples = released_random(instance, size, numpy.float32)
        low, high = cupy.broadcast_to(low, samples.shape), cupy.broadcast_to(high, samples.shape)
        return (low + (high - low) * samples).astype(dtype, copy=False)

    return random, uniform


@patch.applier
def _apply(generator_api, journal):
    import cupy
    import numpy

    generator = expect(generator_api, "Generator", type)
    released_random = expect(generator, "random", callable, own=True)
    Parameters(size=None, dtype=numpy.float64, out=None).check(released_random, method=True)
    uniform = expect(generator, "uniform", callable, own=True)
    Parameters(low=0.0, high=1.0, size=None, dtype=numpy.float64).check(uniform, method=True)
    expect(generator, "_check_output_array", callable, own=True)
    expect(cupy, "_core.elementwise_copy", callable)
    random, uniform = _fixed(numpy, cupy, released_random)
    journal.wrap(generator, "random", random)
    journal.wrap(generator, "uniform", uniform)


class _StandInBitGenerator:
    """What ``Generator`` reads of a bit generator, with a state at an address nobody reads: no driver, no launch."""

    generator = 0  # XORWOW's

    def state(self):
        from gpushim.device import MADE_UP_ADDRESS

        return MADE_UP_ADDRESS

    def _state_size(self):
        return 1


@patch.prober
def _probe():
    """``Generator.random(1000, dtype=numpy.float16)``: samples in [0, 1), filled in a 4,000-byte float32 array."""
    import cupy
    import numpy
    from cupy.random._generator_api import Generator

    from gpushim import device

    if device.cuda_present():
        samples = cupy.random.default_rng(0).random(1000, dtype=numpy.float16).get()
        outside = int(numpy.count_nonzero(~((samples >= 0) & (samples < 1))))
        if outside:
            return f"default_rng(0).random(1000, dtype=float16) gives {outside} samples outside [0, 1)"
        return None
    allocator, sizes = cupy.cuda.get_allocator(), []
    untouched = untouched_memory(cupy)
    cupy.cuda.set_allocator(lambda size: sizes.append(size) or untouched(size))
    try:
        Generator(_StandInBitGenerator()).random(1000, dtype=numpy.float16)
    except cupy.cuda.runtime.CUDARuntimeError:
        pass  # the cast to float16, the first launch CuPy checks
    finally:
        cupy.cuda.set_allocator(allocator)
    if sizes[:1] != [4000]:
        return f"Generator.random(1000, dtype=float16) fills a buffer of {sizes[:1]} bytes with 1000 float32 samples"
    return None
