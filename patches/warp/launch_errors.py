"""A CUDA kernel launch the driver rejects is only logged: ``wp.launch`` returns (Warp 1.x up to 1.14.x).

What breaks.  Warp's native launcher prints the driver's error (``Warp CUDA
error 1: invalid argument``, for a block of more threads than the device
allows, or more shared memory) and returns the ``CUresult``; ``wp.launch``,
a recorded launch's replay and ``Tape.backward`` ignore it.  The kernel never
ran, nothing raises, and the outputs (or gradients) stay as they were:
stale values a simulation or an optimiser carries on with.

Fixed upstream.  NVIDIA/warp GH-1535, fixed by NVIDIA/warp@885967201 on main
and its release-branch twin e08be5ca3 ("Surface CUDA launch errors"), first
in 1.15.0: ``git tag --contains e08be5ca3`` gives v1.15.0 and v1.16.0; v1.14.0
has no ``_raise_cuda_launch_error``, and v1.0.0's ``launch()`` and
``Launch.launch`` call the launcher without looking at its result.  The
launcher's ``restype`` is ``ctypes.c_size_t`` and it returns the
``CUresult`` in 1.0.0, 1.5.0 (``cuda_launch_kernel``) and 1.9.1, 1.10.0,
1.14.0 (``wp_cuda_launch_kernel``).  Run: 1.2.0, 1.3.1 and 1.14.0 show the
bug, and patched give 1.15.0's outcomes.

How the fix works.  1.15.0 checks the launcher's result where ``launch()``
and ``Launch.launch`` call it and raises ``RuntimeError("Error launching
kernel: <key> on device <device>: <runtime.get_error_string()>")``.  The
launcher is bound on the runtime's native library, which ``warp.init()``
loads; so ``Runtime.__init__`` is wrapped (or, where Warp was initialised
first, the runtime's library is changed at once), and the launcher there is
wrapped through the journal, so that ``unpatch()`` restores it.  A non-zero
result raises that RuntimeError from the call site, before anything after
the launch runs (a tape records nothing), exactly where 1.15.0 raises; the
kernel and device are those its caller holds (``kernel`` and ``device`` in
``launch()``, ``self.kernel`` and ``self.device`` in ``Launch.launch``),
read only on failure.  A zero result passes through unchanged.  The patch
checks that the context module has ``Runtime``, ``launch`` and
``Launch.launch``; a native library without the launcher is left as
released.

Not backported.  1.15.0 also checks the launch of an APIC loaded-graph
replay, in the native library (``warp/native/apic.cu``).  Its JAX FFI callback raises the same
RuntimeError, which the callback catches and returns to XLA as an error; with
the patch that callback (``self.kernel`` and ``device`` in 1.14.0's) does
the same.  One difference, read in the source and not run: 1.15.0 leaves the
legacy JAX custom call (``warp/_src/jax/custom_call.py``) unchecked, where
the patched launcher raises inside that ctypes callback, which Python reports
on stderr ("Exception ignored on calling ctypes callback function") before
carrying on as released.

The probe.  Where a CUDA device is present, a kernel launched with a block
of 2048 threads (more than any CUDA device allows) must raise; elsewhere the
probe cannot run.
"""

from __future__ import annotations

import sys

from gpushim import Patch, expect

patch = Patch(
    id="warp.launch_errors",
    affected="<1.15.0",
    fixed_in="1.15.0",
    issue="NVIDIA/warp GH-1535",
    fix="NVIDIA/warp@885967201 (e08be5ca3 in 1.15.0)",
    summary="A CUDA kernel launch the driver rejects is only logged: wp.launch returns and the outputs stay stale.",
)

LAUNCHERS = ("wp_cuda_launch_kernel", "cuda_launch_kernel")  # its name from 1.9, and before


def _caller(frame):
    """The frame that called the launcher: the first above ``frame`` outside wrapt (whose wrappers may be Python)."""
    while frame.f_globals.get("__name__", "").startswith("wrapt"):
        frame = frame.f_back
    return frame


def _rejected(runtime) -> RuntimeError:
    """1.15.0's error for the launch that just failed, naming what the caller launched."""
    scope = _caller(sys._getframe(2)).f_locals
    owner = scope.get("self")
    kernel = scope.get("kernel", getattr(owner, "kernel", None))
    device = scope.get("device", getattr(owner, "device", None))
    key = getattr(kernel, "key", kernel)
    return RuntimeError(f"Error launching kernel: {key} on device {device}: {runtime.get_error_string()}")


def _checking(runtime):
    def launcher(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        if result:
            raise _rejected(runtime)
        return result

    return launcher


def _check_launches(runtime, journal) -> None:
    core = runtime.core
    for name in LAUNCHERS:
        if name in vars(core):
            journal.wrap(core, name, _checking(runtime))
            return


@patch.applier
def _apply(warp, journal):
    context = expect(warp, "_src.context") if hasattr(warp, "_src") else expect(warp, "context")
    runtime_type = expect(context, "Runtime", type)
    expect(context, "launch", callable)
    expect(context, "Launch.launch", callable)
    if getattr(context, "runtime", None) is not None:
        _check_launches(context.runtime, journal)
        return

    def init(wrapped, instance, args, kwargs):
        wrapped(*args, **kwargs)
        _check_launches(instance, journal)

    journal.wrap(runtime_type, "__init__", init)


@patch.prober
def _probe():
    """A launch of 2048 threads a block, which no CUDA device allows, must raise."""
    from gpushim import device

    device.require_a_device()
    import warp

    warp.config.quiet = True
    warp.init()

    def write_one(out):
        out[warp.tid()] = 1

    write_one.__annotations__ = {"out": warp.array(dtype=warp.int32)}
    write_one = warp.kernel(write_one)
    out = warp.zeros(1, dtype=warp.int32, device="cuda:0")
    try:
        warp.launch(write_one, dim=1, outputs=[out], device="cuda:0", block_dim=2048)
        warp.synchronize_device("cuda:0")
    except RuntimeError:
        return None
    return f"a launch with block_dim=2048 returned, and the output reads {out.numpy().tolist()}"
