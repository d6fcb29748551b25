"""What the CuPy patches' probes share: a module's own Python code run on NumPy arrays, without a device.

Where a bug lies in the Python code of a CuPy module (a shape, a loop, a
condition) and not in its kernels, the module's functions run that code on
NumPy arrays once the module's global ``cupy`` reads as NumPy: each function
looks its globals up at each call, so the release's functions, and the
patches' wrappers that read the module's globals at each call, all do.  That
changes the module for every thread for the time of a ``with`` block, which
only a probe's fresh interpreter, or a test, can afford.
"""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def numpy_for_cupy(module, **globals_):
    """``module``'s global ``cupy`` read as NumPy (and ``globals_`` set) inside a ``with`` block."""
    import numpy

    replaced = {"cupy": numpy, **globals_}
    released = {name: vars(module)[name] for name in replaced}
    vars(module).update(replaced)
    try:
        yield
    finally:
        vars(module).update(released)


def import_signal():
    """``cupyx.scipy.signal``, or :class:`gpushim.ProbeCannotRun` naming what its import lacks here."""
    return import_cupyx("cupyx.scipy.signal")


def import_cupyx(name):
    """The module ``name`` of ``cupyx.scipy``, or :class:`gpushim.ProbeCannotRun` naming what its import lacks here.

    ``signal`` and ``interpolate`` load CuPy's cuBLAS module (13.x) or
    cuSPARSE (14.x), which need CUDA libraries that a machine without a CUDA
    toolkit has only as wheels.
    """
    import importlib

    from gpushim import ProbeCannotRun

    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise ProbeCannotRun(f"{name} cannot be imported here: {error}") from error
