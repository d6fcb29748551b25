"""What the CuPy patches share: elementwise kernels made of a release's own, with another body.

A patch that fixes a kernel's body replaces the kernel, which its callers
look up at each call, by one with the release's parameters, name, preamble
and options and the fixed body.  The new kernel is of :class:`Kernel`, CuPy's
``ElementwiseKernel`` with a slot for ``__wrapped__`` (the released kernel,
as the journal requires of a replacement), made on first use since gpushim
never imports CuPy itself; ``pickle`` finds it here by name.
"""

from __future__ import annotations


def _kernel_class(cupy):
    made = globals().get("Kernel")
    if made is None:
        made = type("Kernel", (cupy.ElementwiseKernel,), {"__slots__": ("__wrapped__",), "__module__": __name__})
        globals()["Kernel"] = made
    return made


def __getattr__(name):
    if name == "Kernel":
        import cupy

        return _kernel_class(cupy)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def signature(parameters):
    """ElementwiseKernel's spelling of ``parameters`` (``ParameterInfo``): ``"T t, raw T bins"``, ``"float64 y"``."""
    import numpy

    def one(p):
        kind = p.ctype if p.dtype is None else numpy.dtype(p.dtype).name
        return f"{'raw ' if p.raw else ''}{kind} {p.name}"

    return ", ".join(one(p) for p in parameters)


def kernel_like(cupy, released, operation):
    """A kernel like ``released`` but for its body, ``operation``; it keeps ``released`` as ``__wrapped__``."""
    fixed = _kernel_class(cupy)(
        signature(released.in_params),
        signature(released.out_params),
        operation,
        released.name,
        reduce_dims=released.reduce_dims,
        preamble=released.preamble,
        no_return=released.no_return,
        return_tuple=released.return_tuple,
        **released.kwargs,
    )
    fixed.__wrapped__ = released
    return fixed
