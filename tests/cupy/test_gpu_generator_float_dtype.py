"""cupy.generator_float_dtype on a CUDA device: float16 samples overwrite the array after their buffer.

The CPU tests prove the sizes asked for.  What a device adds is the damage:
``Generator.random(1024, dtype=float16)`` before 13.4.0 gets a buffer of
2,048 bytes, which cuRAND's float32 kernel fills with 4,096, and ``uniform``
computes from that buffer.  Each test puts the buffer in a freed block right
before a live array holding 0.5 (``device_pool``), its first allocation,
and checks that array and
the samples, which must lie in ``[0, 1)``.  Without a device they are
skipped with "no CUDA device" (tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.generator_float_dtype import patch
from tests.cupy.device_pool import a_freed_block_before_a_live_array
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)
SAMPLES = 1024  # 2,048 bytes of float16: a whole block of the pool, so the next 2,048 written land in the neighbour
# method: the draw from the generator and the bounds, device arrays made before the pool is laid out
DRAWS = {
    "random": lambda rng, low, high: rng.random(SAMPLES, dtype=numpy.float16),
    "uniform": lambda rng, low, high: rng.uniform(low, high, size=SAMPLES, dtype=numpy.float16),
}


def drawn(method):
    """``method``'s float16 samples, drawn with a freed block of their size before a live array; both, on the host."""
    import cupy

    made = cupy.random.default_rng(0), cupy.zeros(()), cupy.ones(())
    with a_freed_block_before_a_live_array(SAMPLES * 2) as neighbour:
        samples = DRAWS[method](*made)
        cupy.cuda.get_current_stream().synchronize()
        return samples.get(), neighbour.get()


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("method", DRAWS)
def test_needed_the_live_array_after_the_buffer_is_overwritten_without_gpushim(method):
    _, neighbour = drawn(method)
    assert numpy.count_nonzero(neighbour != 0.5) > 0


@on_gpu
@GATE.affected_only
def test_needed_the_samples_are_halves_of_float32_bit_patterns_without_gpushim():
    samples, _ = drawn("random")
    assert numpy.count_nonzero(~((samples >= 0) & (samples < 1))) > 0


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("method", DRAWS)
def test_the_live_array_keeps_its_values_and_the_samples_lie_in_0_1(method, this_patch):
    samples, neighbour = drawn(method)
    assert bool((neighbour == 0.5).all())
    assert samples.dtype == numpy.float16
    assert bool(((samples >= 0) & (samples <= 1)).all())  # uniform's float16 rounding may reach 1.0
