"""What the CuPy patches' probes share: memory that tracing and dispatch never touch, a stream kept busy."""


def untouched_memory(cupy):
    """An allocator for ``cupy.cuda.set_allocator`` whose memory nobody touches.

    Tracing a fused kernel needs the shapes and dtypes of arrays, not their
    memory, so the fusion probes hand out a made-up device address and run
    without a GPU.
    """

    from gpushim.device import MADE_UP_ADDRESS

    def allocate(size):
        memory = cupy.cuda.UnownedMemory(MADE_UP_ADDRESS, max(size, 1), None, device_id=0)
        return cupy.cuda.MemoryPointer(memory, 0)

    return allocate


# A kernel that keeps its stream busy for ``cycles`` clock ticks, so that what is queued after it waits.
_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}
"""


def keep_busy(cupy, numpy):
    """Queue on the current stream a kernel that spins for about half a second (2**30 ticks at 2 GHz): what is
    queued after it on that stream waits, what another stream runs meanwhile does not.  A device is needed."""
    cupy.RawKernel(_SPIN, "spin")((1,), (1,), (numpy.int64(1 << 30),))
