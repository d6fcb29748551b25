"""Warp 1.12.1 to 1.14.x drop the first ``-C`` of a 64-bit ``wp.constant`` ``C`` in a kernel: ``-C * x`` is ``C * x``.

What breaks.  1.12.1 made ``Adjoint.add_call`` emit a 64-bit scalar
constructor of one constant argument as that argument's variable, retyped and
set to the literal (the fix of NVIDIA/warp#485, backported to older releases
by ``warp.float64_constants``).  Its test is only that the builtin returns
float64, int64 or uint64 and takes one argument, and ``neg`` passes it: with
``C = wp.constant(wp.float64(2.0))`` the first ``-C`` of a kernel or function
is emitted as ``C``, so ``-C * x`` gives ``2 * x`` (later uses are right: the
shortcut has turned ``C``'s variable into a plain one).  int64 and uint64
constants likewise.  Python numbers are 32-bit constants and are not hit;
``wp.constant`` or ``wp.static`` of a Warp 64-bit scalar is.

Fixed upstream.  NVIDIA/warp#1540, fixed by NVIDIA/warp@5d3726bd0 (in
1.15.0), which also asks that the builtin's native function be named as the
type it returns, as only the constructors are.

How the fix works.  ``Adjoint.add_call`` is wrapped.  For a builtin other
than the three constructors, called with one positional argument holding a
constant of a 64-bit scalar type, the argument's constant is hidden while
Warp emits the call, so that Warp emits the call itself, as 1.15.0 does; it
is restored at once, and the variable is declared as before.

The module hash must differ: Warp keys built modules, in memory and in the
kernel cache, on a hash of the kernels' source and constants, not of the code
generated from them, so a build made without the patch would be reused.
While the patch is applied, the hash of every kernel or function that
references a 64-bit scalar constant (``wp.constant`` or ``wp.static``) also
covers this patch (``ModuleHasher.hash_adjoint``), and every module already
hashed is marked modified (``Module.mark_modified``) so that it is hashed
again at its next launch.

Not backported.  1.15.0's typing of ``scalar_base.__init__``.  ``unpatch()``
leaves a module loaded while patched with its build in memory until Warp
hashes it again.

The probe.  ``wp.float64(-C)`` with ``C = wp.constant(wp.float64(2.0))`` on
the CPU, which must give -2.0.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect
from gpushim.patches.warp._codegen import salted

patch = Patch(
    id="warp.float64_constant_sign",
    affected=">=1.12.1,<1.15.0",
    fixed_in="1.15.0",
    issue="NVIDIA/warp#1540",
    fix="NVIDIA/warp@5d3726bd0",
    summary="The first -C of a 64-bit wp.constant C in a kernel gives C: -C * x computes C * x.",
)

# Mixed into the hash of every kernel or function this patch may generate differently;
# a change to the code it generates must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.float64_constant_sign 1"

_WIDE = ("float64", "int64", "uint64")
_ADD_CALL = Parameters("adj", "func", "args", "kwargs", "type_args", min_outputs=None)
_HASH_ADJOINT = Parameters("adj")  # after self


@patch.applier
def _apply(warp, journal):
    import sys

    codegen, context, types = (sys.modules.get(f"warp._src.{name}") for name in ("codegen", "context", "types"))
    adjoint = expect(codegen, "Adjoint", type)
    Var = expect(codegen, "Var", type)
    wide = tuple(expect(types, name, type) for name in _WIDE)
    _ADD_CALL.check(expect(adjoint, "add_call", callable))
    expect(adjoint, "get_references", callable)
    hasher = expect(context, "ModuleHasher", type)
    _HASH_ADJOINT.check(expect(hasher, "hash_adjoint", callable), method=True)
    expect(context, "Module.mark_modified", callable)

    def add_call(wrapped, adj, args, kwargs):
        try:
            _, func, call_args, call_kwargs, *_ = _ADD_CALL.bind(adj, *args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)
        if call_kwargs or len(call_args) != 1 or not func.is_builtin() or func.key in _WIDE:
            return wrapped(*args, **kwargs)
        (arg,) = call_args
        if not isinstance(arg, Var) or arg.type not in wide or arg.constant is None:
            return wrapped(*args, **kwargs)
        constant, arg.constant = arg.constant, None
        try:
            return wrapped(*args, **kwargs)
        finally:
            arg.constant = constant

    def references_wide_constant(adj) -> bool:
        constants, _, _ = adj.get_references()
        values = [*constants.values(), *getattr(adj, "resolved_static_expressions", {}).values()]
        return any(type(value) in wide for value in values)

    def hash_adjoint(wrapped, instance, args, kwargs):
        digest = wrapped(*args, **kwargs)
        (adj,) = _HASH_ADJOINT.bind(*args, **kwargs)
        return salted(digest, _HASH_SALT) if references_wide_constant(adj) else digest

    journal.wrap(adjoint, "add_call", add_call)
    journal.wrap(hasher, "hash_adjoint", hash_adjoint)
    for module in list(expect(context, "user_modules", dict).values()):
        hashed = vars(module)  # a hasher up to 1.5, hashers by device from 1.6
        if hashed.get("hasher") is not None or hashed.get("hashers"):
            module.mark_modified()


@patch.prober
def _probe():
    """``wp.float64(-C)`` with ``C = wp.constant(wp.float64(2.0))`` must give -2.0; 1.12.1 to 1.14.x give 2.0.

    Not ``-C * x``: 1.6.0 to 1.11.x, outside this patch's range, fold ``-C``
    into a float32 constant, and that product does not compile there.

    The kernel is defined anew at each call, which makes Warp hash its module
    again, so the answer follows the patch's current state.
    """
    import warp

    warp.config.quiet = True
    warp.init()
    two = warp.constant(warp.float64(2.0))

    def negated(out):
        out[0] = warp.float64(-two)

    negated.__annotations__ = {"out": warp.array(dtype=warp.float64)}
    negated = warp.kernel(negated)

    out = warp.zeros(1, dtype=warp.float64, device="cpu")
    warp.launch(negated, dim=1, inputs=[out], device="cpu")
    result = float(out.numpy()[0])
    if result != -2.0:
        return f"wp.float64(-C) with C = wp.constant(wp.float64(2.0)) gives {result!r}, not -2.0"
    return None
