"""``cupyx.scipy.signal.sawtooth`` and ``square`` are wrong for negative times: C's ``fmod`` is not Python's ``%``.

What breaks.  Both waveforms reduce ``t`` to one period with ``fmod(t, 2π)``
in their kernels, which for a negative ``t`` is negative where SciPy's ``t %
2π`` lies in ``[0, 2π)``.  ``sawtooth(-1)`` is -1.318 where SciPy gives
0.682, and ``square`` of a negative ``t`` takes the wrong sign over part of
each period; positive times are right.  Nothing raises.  Every CuPy 13.x
release does this, 13.6.0 included (12.x has no ``cupyx.scipy.signal``
waveforms), with every NumPy.

Fixed upstream.  cupy/cupy#9568, fixed by #9613 (merged as d54e27db7) and
its v14 backport #9624 (4a65b69e8), released in 14.0.0 and not backported
to 13.x: ``git tag --contains`` of both gives v14.0.0 onwards.  The kernels'
line is the same in v13.0.0 and v13.6.0; 13.1.0 and 13.6.0 run the patch's
proofs, and 14.0.0, the first 14.x release on PyPI, records the reference.

How the fix works.  14.0.0 adds 2π to a negative remainder before using it.
The patch replaces the two kernels that ``sawtooth`` and ``square`` look up
among their module's globals at each call, ``_sawtooth_kernel`` and
``_square_kernel``, by kernels made of the release's own: the same
parameters, name and options, and the same body with its one line
``const T tmod { fmod( t, 2.0 * M_PI ) };`` declaring a ``tmod`` that gets 2π
added where it is negative.  A release whose kernels lack that line, once
each, is a mismatch.  The new kernels compile on first use, as the released
ones do; ``gpushim.unpatch()`` puts the released ones back, with their
caches.

Not backported.  14.0.0 also drops the kernels' ``-std=c++11`` option, with
every other kernel's (cupy/cupy#9226), which the patch keeps: the
reference's record holds the values the kernels' bodies compute, not their
options.

The probe.  Without a device, the body of the installed ``_sawtooth_kernel``
compiled by the host's C++ compiler and run at ``t = -1``: it must give
``0.682``, SciPy's value; with a device, ``sawtooth(-1)`` itself.  Without
either (no device, no ``c++`` on PATH), it cannot run.  Importing
``cupyx.scipy.signal`` needs libcublas.
"""

from __future__ import annotations

from gpushim import Patch, ProbeCannotRun, TargetMismatch, expect

patch = Patch(
    id="cupy.waveform_negative_time",
    affected=">=13.0.0,<14.0.0",
    fixed_in="14.0.0",
    issue="cupy/cupy#9568",
    fix="cupy/cupy#9613 (v14 backport #9624)",
    summary="cupyx.scipy.signal.sawtooth and square are wrong for negative t: the kernels reduce t with C's fmod.",
    module="cupyx.scipy.signal",
)

KERNELS = ("_sawtooth_kernel", "_square_kernel")
_RELEASED_LINE = "const T tmod { fmod( t, 2.0 * M_PI ) };"
# Python's t % 2π: C's remainder, moved up by a period where it is negative.
_FIXED_LINE = "T tmod { fmod( t, 2.0 * M_PI ) };\n    if ( tmod < 0 ) { tmod += 2.0 * M_PI; }"


def _signature(parameters):
    """ElementwiseKernel's spelling of ``parameters`` (``ParameterInfo``): ``"T t, T w"``, ``"float64 y"``."""
    import numpy

    def one(p):
        kind = p.ctype if p.dtype is None else numpy.dtype(p.dtype).name
        return f"{'raw ' if p.raw else ''}{kind} {p.name}"

    return ", ".join(one(p) for p in parameters)


def _kernel_class(cupy):
    """``Kernel``, this module's class of the fixed kernels: CuPy's, with a slot for ``__wrapped__``.

    Made on first use, as it derives from CuPy's ``ElementwiseKernel`` and
    gpushim never imports CuPy itself; ``pickle`` finds it here by name
    (the module's ``__getattr__``).
    """
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


def _fixed_kernel(cupy, released):
    """A kernel like ``released`` whose ``tmod`` is Python's remainder; it keeps ``released`` as ``__wrapped__``."""
    if released.operation.count(_RELEASED_LINE) != 1:
        raise TargetMismatch(f"{released.name} does not declare tmod once as {_RELEASED_LINE!r}")

    fixed = _kernel_class(cupy)(
        _signature(released.in_params),
        _signature(released.out_params),
        released.operation.replace(_RELEASED_LINE, _FIXED_LINE),
        released.name,
        reduce_dims=released.reduce_dims,
        preamble=released.preamble,
        no_return=released.no_return,
        return_tuple=released.return_tuple,
        **released.kwargs,
    )
    fixed.__wrapped__ = released
    return fixed


@patch.applier
def _apply(signal, journal):
    waveforms = expect(signal, "_waveforms")
    kernel_class = expect(waveforms, "cupy.ElementwiseKernel", type)
    for name in KERNELS:
        released = expect(waveforms, name, kernel_class)
        journal.replace(waveforms, name, _fixed_kernel(waveforms.cupy, released))


def host_values(operation, points):
    """The kernel body ``operation``, compiled by the host's C++ compiler for ``double``, at ``points`` ``(t, w)``.

    Returns the printed values (``%.17g``), one per point; raises
    :class:`ProbeCannotRun` where no ``c++`` is on PATH.  The body is the
    kernel's own: CuPy's elementwise code runs it once per element with
    ``t``, ``w`` and ``y`` bound as here, and ``fmod`` is exact on a device as
    on the host.
    """
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    compiler = shutil.which("c++")
    if compiler is None:
        raise ProbeCannotRun("no C++ compiler (c++) on PATH to compile the kernel's body on the host")
    source = HOST_HARNESS.replace("@OPERATION@", operation)
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder, "body")
        subprocess.run(
            [compiler, "-std=c++11", "-O0", "-x", "c++", "-", "-o", str(program)],
            input=source,
            text=True,
            check=True,
            capture_output=True,
        )
        arguments = [f"{value!r}" for point in points for value in point]
        finished = subprocess.run([str(program), *arguments], text=True, check=True, capture_output=True)
    return finished.stdout.split()


HOST_HARNESS = """
#include <cmath>
#include <cstdio>
#include <cstdlib>

template <typename T>
double body(const T t, const T w) {
    double y;
@OPERATION@
    return y;
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        std::printf("%.17g\\n", body<double>(std::strtod(argv[i], 0), std::strtod(argv[i + 1], 0)));
    }
    return 0;
}
"""


@patch.prober
def _probe():
    """``sawtooth(-1)``, on a device or by the kernel's body compiled on the host: SciPy's 0.682, not -1.318."""
    from gpushim import device
    from gpushim.patches.cupy._on_numpy import import_signal

    signal = import_signal()
    if device.cuda_present():
        import cupy

        value = float(signal.sawtooth(cupy.asarray([-1.0]))[0])
    else:
        value = float(host_values(signal._waveforms._sawtooth_kernel.operation, [(-1.0, 1.0)])[0])
    return (
        None
        if abs(value - 0.6816901138162093) < 1e-12
        else f"cupyx.scipy.signal.sawtooth(-1) is {value:.4f}, not 0.6817"
    )
