"""``warp.optim.SGD`` mixes up momentum, dampening and weight decay (Warp 1.x up to 1.10.1).

What breaks.  Warp's SGD kernel is declared ``(g, b, lr, weight_decay,
momentum, damping, nesterov, t, params)``, but ``SGD.step_detail`` launches it
with the inputs ``[g, b, lr, momentum, dampening, weight_decay, nesterov, t,
params]``: the momentum factor acts as weight decay, dampening as momentum and
weight decay as dampening.  ``SGD(lr=0.1, momentum=0.9)`` on ``[1, 2]`` with
gradient ``[0.1, 0.2]`` steps to ``[0.9, 1.8]`` instead of torch's ``[0.99,
1.98]``, and nothing raises.

Fixed upstream.  NVIDIA/warp GH-1143, fixed by NVIDIA/warp@acc688c63 (in
1.11.0), which reorders the kernel's parameters to match the launch.  The
mismatch is as old as the optimizer (0.11.0), so every 1.x release before
1.11.0 has it.

How the fix works.  The kernel itself is right for its own parameter order, so
the backport leaves it alone, and with it Warp's module hash and kernel cache:
``step_detail`` is wrapped so that Warp's own code launches the old kernel
with the three values in the positions the kernel reads them from.  The
wrapper binds the call as ``step_detail`` binds it and hands
``weight_decay``, ``momentum`` and ``dampening`` on in the places where the
released code puts ``momentum``, ``dampening`` and ``weight_decay``; Warp's
assertions and launch run as released.  ``SGD.step`` looks ``step_detail`` up
on the class at every step, so optimizers made before the patch was applied
are fixed too, and so are direct callers of the public static method, as in
1.11.0.

The module is ``warp/optim/sgd.py`` up to 1.9 and ``warp/_src/optim/sgd.py``
from 1.10 (``warp.optim.sgd`` re-exports it); neither is imported by
``import warp``, so the patch waits for the one the release has, which
``warp.optim`` imports in both layouts.  Before wrapping, the patch
checks both orders it corrects: the parameters of the kernel's function and
of ``step_detail``; anything else is a TargetMismatch.

Not backported.  1.11.0's new docstrings and tests.

The probe.  One step of ``SGD(lr=0.1, momentum=0.9)`` on the CPU, which must
give ``[0.99, 1.98]``.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="warp.sgd_argument_order",
    affected="<1.11.0",
    fixed_in="1.11.0",
    issue="NVIDIA/warp GH-1143",
    fix="NVIDIA/warp@acc688c63",
    summary="warp.optim.SGD applies momentum as weight decay, dampening as momentum and weight decay as dampening.",
    module=("warp._src.optim.sgd", "warp.optim.sgd"),
)

# The kernel's order, which is right, and the order step_detail passes the values in.
_KERNEL = Parameters("g", "b", "lr", "weight_decay", "momentum", "damping", "nesterov", "t", "params")
_STEP_DETAIL = Parameters("g", "b", "lr", "momentum", "dampening", "weight_decay", "nesterov", "t", "params")


def _step_detail(wrapped, instance, args, kwargs):
    try:
        g, b, lr, momentum, dampening, weight_decay, nesterov, t, params = _STEP_DETAIL.bind(*args, **kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
    return wrapped(g, b, lr, weight_decay, momentum, dampening, nesterov, t, params)


@patch.applier
def _apply(optim, journal):
    import sys

    sgd = expect(optim, "SGD", type)
    expect(sgd, "step_detail", staticmethod, own=True)
    _KERNEL.check(expect(sys.modules.get(sgd.__module__), "sgd_step_kernel.func", callable))
    _STEP_DETAIL.check(sgd.step_detail)
    journal.wrap(sgd, "step_detail", _step_detail)


@patch.prober
def _probe():
    """One step of SGD(lr=0.1, momentum=0.9) on [1, 2] with gradient [0.1, 0.2] gives [0.99, 1.98]."""
    import numpy as np
    import warp
    import warp.optim

    warp.config.quiet = True
    warp.init()
    params = warp.array([1.0, 2.0], dtype=warp.float32, device="cpu")
    grad = warp.array([0.1, 0.2], dtype=warp.float32, device="cpu")
    warp.optim.SGD([params], lr=0.1, momentum=0.9).step([grad])
    result = params.numpy()
    if not np.allclose(result, [0.99, 1.98]):
        result = [round(value, 6) for value in result.tolist()]
        return (
            f"one step of SGD(lr=0.1, momentum=0.9) on [1, 2] with gradient [0.1, 0.2] gives {result}, not [0.99, 1.98]"
        )
    return None
