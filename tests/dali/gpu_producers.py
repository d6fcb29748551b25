"""A producer of real device memory whose CUDA Array Interface says ``"stream": None``, for the GPU tests."""

from __future__ import annotations


class StreamNone:
    """A CuPy array whose interface says ``"stream": None``, as PyCUDA's gpuarray does (NVIDIA/DALI#5423).

    ``"stream": None`` promises the consumer that nothing is pending on the
    memory, so the array's stream is synchronized first.
    """

    def __init__(self, array) -> None:
        import cupy

        cupy.cuda.get_current_stream().synchronize()
        self.array = array
        self.shape = array.shape  # what fn.external_source reads to check a batch
        self.__cuda_array_interface__ = {**array.__cuda_array_interface__, "stream": None}
