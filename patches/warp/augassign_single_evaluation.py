"""Warp 1.4.0 to 1.12.0 evaluate parts of an augmented assignment twice: ``v[1] *= f()`` calls ``f`` twice.

What breaks.  ``Adjoint.emit_AugAssign`` evaluates the right-hand side,
then, for most statements, rewrites ``t op= x`` as ``t = t op x`` and
generates that, which evaluates ``x`` again and the target's indices once
for the load and once for the store.  Every call in them runs again: atomic
counters, random draws and writes through a ``wp.func`` happen twice or
more, while the values stay right.  From 1.4.0 it does so for subscripts of
local vectors and matrices (``v[1] *= f()``) and of arrays it cannot update
atomically (int8 ``b[0] += f()``); from 1.4.2 also for ``a[i] *= f()`` and
``a[i] /= f()`` on float arrays, and ``a[g(i)] *= 2.0`` calls ``g`` 3
times; from 1.8.0 for names (``x += f()``, fixed in 1.12.0); from 1.9.0 for
attributes (``s.value += f()``).  The indices of an attribute's aggregate
(``ss[g(0)].value += 5.0`` calls ``g`` 3 times) and of subscripts rewritten
so were evaluated more than once before 1.4.0 already (1.3.1), outside this
patch's range.

Fixed upstream.  NVIDIA/warp#1230, fixed by NVIDIA/warp@7af341966 (in
1.12.0) for names, and NVIDIA/warp#1233, fixed by NVIDIA/warp@bbef4b3ca
(on main, in 1.13.0; in 1.12.1 as d87042b8d) for subscripts and attributes
(``git tag --contains``: v1.12.0 and v1.12.1 first): the right-hand side
and the target are evaluated once, the current value loaded from them and
stored back.

How the fix works.  The code generator for augmented assignments is
wrapped.  Before Warp's generator runs, the wrapper evaluates the
right-hand side, then each index of the target that holds a call, once,
binds each result to a symbol of its own and hands Warp the statement with
those parts replaced by the symbols' names: however often Warp evaluates
them, it emits nothing more (``_codegen.evaluated_once``).  Statements
without calls in those places are generated as released.  warp.augassign_mul_div
(1.4.0 and 1.4.1) lowers the statements it takes over with the same
rewrite, in whichever order the two wrap, so together they give 1.12.1's
results on 1.4.x.  ``Adjoint.eval`` dispatches through the class-level dict
``Adjoint.node_visitors``, so the wrapper is installed as its item too.

Every kernel or function whose source holds an augmented assignment with a
call in it is hashed apart from the release's build while the patch is
applied (``_codegen.key_builds_apart``): the module hash of such kernels
differs, in memory and in the kernel cache directory.

Not backported.  1.12.1's lowering itself (loading the current value
through the evaluated target, user-defined operators for ``op=``, the type
check of ``x op= y`` on names, the autograd read tracking it suspends); the
generated code stays the release's but for the calls.  Calls in a target's
slices (``a[f():]``) or outside its indices are evaluated as released.
``unpatch()`` leaves a module already loaded while patched as it is until
Warp hashes it again, as warp.augassign_mul_div does.

The probe.  ``v[1] *= counted(c, 4.0)`` on a local vector on the CPU,
where ``counted`` adds 1 to ``c[0]``: ``c[0]`` must be 1.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect, expect_same
from gpushim.patches.warp._codegen import codegen_and_context, evaluated_once, holds_call, key_builds_apart

patch = Patch(
    id="warp.augassign_single_evaluation",
    affected=">=1.4.0,<1.12.1",
    fixed_in="1.12.1",
    issue="NVIDIA/warp#1230, NVIDIA/warp#1233",
    fix="NVIDIA/warp@7af341966 and NVIDIA/warp@bbef4b3ca (in 1.12.1 as d87042b8d)",
    summary="x op= f() calls f twice, and a call in a subscript target's index up to three times.",
)

# Mixed into the hash of every adjoint this patch may generate differently;
# a change to the generator below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.augassign_single_evaluation 1"

_EMIT_AUGASSIGN = Parameters("adj", "node")


def _rewritten(tree) -> bool:
    """Whether the wrapper may hand Warp a statement of this tree rewritten: an augmented assignment holding a call."""
    import ast

    return any(isinstance(node, ast.AugAssign) and holds_call(node) for node in ast.walk(tree))


def _emit_augassign(wrapped, instance, args, kwargs):
    try:
        adj, node = _EMIT_AUGASSIGN.bind(*(args if instance is None else (instance, *args)), **kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)
    with evaluated_once(adj, node) as once:
        return wrapped(adj, once) if instance is None else wrapped(once)


@patch.applier
def _apply(warp, journal):
    import ast

    codegen, context = codegen_and_context(warp)
    adjoint = expect(codegen, "Adjoint", type)
    for name in ("emit_AugAssign", "node_visitors", "eval"):
        expect(adjoint, name)
    for path in ("ModuleHasher.hash_adjoint", "Module.mark_modified", "user_modules"):
        expect(context, path)
    _EMIT_AUGASSIGN.check(adjoint.emit_AugAssign)
    expect_same(
        adjoint.node_visitors.get(ast.AugAssign),
        vars(adjoint).get("emit_AugAssign"),
        "Adjoint.node_visitors[ast.AugAssign]",
        "Adjoint.emit_AugAssign",
    )

    installed = journal.wrap(adjoint, "emit_AugAssign", _emit_augassign)
    journal.replace_item(adjoint.node_visitors, ast.AugAssign, installed)
    key_builds_apart(context, journal, _HASH_SALT, _rewritten)


@patch.prober
def _probe():
    """``v[1] *= counted(c, 4.0)`` and ``w[1] += counted(c, 4.0)`` on local vectors call ``counted`` once each.

    1.4.2 to 1.12.0 call it twice in the first; 1.4.0 to 1.4.2 twice in the
    second, which ``warp.augassign_mul_div`` leaves alone, so the bug shows on
    1.4.0 and 1.4.1 with that patch applied too.

    The kernel is defined anew at each call, which makes Warp hash its module
    again, so the answer follows the patch's current state; it runs on the CPU.
    """
    import warp

    warp.config.quiet = True
    warp.init()

    def counted(c, x):
        warp.atomic_add(c, 0, 1)
        return x

    counted.__annotations__ = {"c": warp.array(dtype=warp.int32), "x": float, "return": float}
    counted = warp.func(counted)

    def scale(c, out):
        v = warp.vec3(1.0, 2.0, 3.0)
        v[1] *= counted(c, 4.0)
        w = warp.vec3(1.0, 2.0, 3.0)
        w[1] += counted(c, 4.0)
        out[0] = v[1]
        out[1] = w[1]

    scale.__annotations__ = {"c": warp.array(dtype=warp.int32), "out": warp.array(dtype=float)}
    scale = warp.kernel(scale)

    calls = warp.zeros(1, dtype=warp.int32, device="cpu")
    out = warp.zeros(2, dtype=float, device="cpu")
    warp.launch(scale, dim=1, inputs=[calls, out], device="cpu")
    count, values = int(calls.numpy()[0]), out.numpy().tolist()
    if (count, values) != (2, [8.0, 6.0]):
        return (
            f"v[1] *= counted(c, 4.0) and w[1] += counted(c, 4.0) on v[1] = w[1] = 2.0 call counted {count} times"
            f" and give {values}, not twice and [8.0, 6.0]"
        )
    return None
