"""What the CuPy patches' probes share: memory that tracing and dispatch never touch."""


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
