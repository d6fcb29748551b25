"""A function shared by a forward-only kernel and a differentiable one may get a stub adjoint (Warp 1.9 to 1.15).

What breaks.  A ``@wp.func`` generates its adjoint only when a kernel with
the backward pass enabled reaches it: building such a kernel marks each
function it calls as used by a backward kernel, and each function marks the
ones it calls while it is built.  But a module builds each function once, in
the order its kernels come, and that order is the order of a weak set of
live kernels: random from process to process.  Where an
``enable_backward=False`` kernel comes first, the functions it reaches are
built unmarked, and a differentiable kernel reaching them later marks the
first level only: the functions those call keep the stub adjoint ("reverse
mode disabled"), and the gradient through them is silently zero.  Seen on
1.15.0 with ``fwd_only`` and ``bwd`` sharing ``helper(x) = leaf(x) = x*x``:
``x.grad`` is 0.0 in the processes where ``fwd_only`` comes first (4 of 6
here), 6.0 in the others.  The bad build then stays in the kernel cache.

Fixed upstream.  NVIDIA/warp@53fc55948 ("Fix build-order-dependent
backward-use propagation", on main, in no tag); v1.16.0 spreads the marks the
same way from 69e82cda5 (``git tag --contains``: v1.16.0 first): after the
kernels are built, along the calls recorded between functions, whatever the
order.  The marks came with c15d91338 ("Skip adjoint function codegen if
not required", GH-841; v1.9.0 first).  Run: 1.9.0 and 1.15.0 give 0.0 where
the forward-only kernel comes first; 1.16.0 gives 6.0.

How the fix works.  The module builder takes its kernels from
``ModuleHasher.get_unique_kernels``; the patch has it give the differentiable
kernels first, in their order, then the forward-only ones.  Every function a
differentiable kernel reaches is then built marked, as 1.16.0's spreading
leaves it, and the forward-only kernels reach only built functions or ones
no differentiable kernel reaches, which 1.16.0 leaves unmarked too.  The
module's hash does not depend on that order (Warp hashes its kernels sorted),
so a stub build an unpatched process cached would be reused: the hash of a
kernel whose decorator sets ``enable_backward`` covers the patch while it is
applied (``_codegen.key_builds_apart``), and a module mixing both kinds holds
such a kernel.

Not backported.  A module mixing the two kinds through options given
otherwise (``wp.Kernel(..., options=...)``, ``wp.kernel(f, enable_backward=...)``
called rather than used as a decorator) is built right, but a stub build of it
already cached by an unpatched process is not keyed apart.

The probe.  ``fwd_only`` and ``bwd`` sharing ``helper`` and ``leaf``, in a
fresh module each try, until a try whose forward-only kernel comes first:
``x.grad`` must be 6.0 there.  Only that try builds its module, so that a
later process never loads, under the same name, a build made in the order
that hides the bug.
"""

import ast

from gpushim import Patch, TargetMismatch, expect
from gpushim.patches.warp._codegen import codegen_and_context, key_builds_apart

patch = Patch(
    id="warp.shared_function_adjoint",
    affected=">=1.9.0,<1.16.0",
    fixed_in="1.16.0",
    issue="Warp 1.16.0 changelog: stub adjoint of a function shared with an enable_backward=False kernel",
    fix="NVIDIA/warp@69e82cda5 (53fc55948 on main)",
    summary="A function shared by an enable_backward=False kernel and a differentiable one may get a stub adjoint.",
)

# Mixed into the hash of every adjoint this patch may generate differently;
# a change to the code below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.shared_function_adjoint 1"

# Tries of the probe: each comes out in the order that shows the bug with probability 1/2.
_TRIES = 16


def _sets_enable_backward(tree: ast.AST) -> bool:
    """Whether a decorator in ``tree`` sets ``enable_backward``: one that may share a module with the other kind."""
    return any(
        isinstance(decorator, ast.Call) and any(keyword.arg == "enable_backward" for keyword in decorator.keywords)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for decorator in node.decorator_list
    )


def _forward_only(kernel) -> bool:
    return not kernel.options.get("enable_backward", True)


@patch.applier
def _apply(warp, journal):
    codegen, context = codegen_and_context(warp)
    expect(codegen, "Adjoint.__init__", callable)
    if "used_by_backward_kernel" not in expect(context, "ModuleBuilder.build_kernel.__code__").co_names:
        raise TargetMismatch("ModuleBuilder.build_kernel marks no kernel as used by the backward pass")
    hasher = expect(context, "ModuleHasher", type)
    expect(hasher, "get_unique_kernels", callable, own=True)

    def get_unique_kernels(wrapped, instance, args, kwargs):
        return sorted(wrapped(*args, **kwargs), key=_forward_only)

    journal.wrap(hasher, "get_unique_kernels", get_unique_kernels)
    key_builds_apart(context, journal, _HASH_SALT, _sets_enable_backward)


@patch.prober
def _probe():
    import numpy
    import warp

    warp.config.quiet = True
    warp.init()
    if "used_by_backward_kernel" not in codegen_and_context(warp)[1].ModuleBuilder.build_kernel.__code__.co_names:
        return None  # before 1.9.0 every function generates its adjoint
    tries = (_shared_helper_gradient(warp, numpy, f"gpushim_forward_only_first_{attempt}") for attempt in range(_TRIES))
    gradient = next((gradient for gradient in tries if gradient is not None), 6.0)
    if gradient != 6.0:
        return f"the gradient through a function a forward-only kernel built first is {gradient}, not 6.0"
    return None


def _shared_helper_gradient(warp, numpy, module):
    """The gradient the differentiable kernel gives where a fresh ``module`` has its forward-only kernel first; None,
    and nothing built, where it has not.

    Warp's module hash does not depend on the order, so a build in the other
    order, cached by an earlier process, would be loaded in its place: under
    each name only builds in the order that shows the bug are made.  The
    kernels' decorators set ``enable_backward``, as a user's do, so a
    patched process keys their builds apart from an unpatched one's.
    """

    def leaf(x: float):
        return x * x

    def helper(x: float):
        return leaf(x)

    for function in (leaf, helper):
        function.__module__ = module
    leaf, helper = warp.func(leaf), warp.func(helper)
    home = warp.get_module(module)

    @warp.kernel(enable_backward=False, module=home)
    def fwd_only(x: warp.array(dtype=float), y: warp.array(dtype=float)):
        tid = warp.tid()
        y[tid] = helper(x[tid])

    @warp.kernel(enable_backward=True, module=home)
    def bwd(x: warp.array(dtype=float), y: warp.array(dtype=float)):
        tid = warp.tid()
        y[tid] = helper(x[tid])

    if next(iter(home._live_kernels)) is not fwd_only:
        return None
    x = warp.array(numpy.array([3.0], numpy.float32), dtype=float, requires_grad=True, device="cpu")
    y = warp.zeros_like(x)
    warp.launch(fwd_only, dim=1, inputs=[x], outputs=[y], device="cpu")
    tape = warp.Tape()
    with tape:
        warp.launch(bwd, dim=1, inputs=[x], outputs=[y], device="cpu")
    tape.backward(grads={y: warp.ones_like(y)})
    return float(x.grad.numpy()[0])
