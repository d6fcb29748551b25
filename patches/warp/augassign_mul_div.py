"""Warp 1.4.0 and 1.4.1 skip ``a[i] *= x`` and ``a[i] /= x`` on array elements.

What breaks.  1.4.0 taught ``Adjoint.emit_AugAssign`` to turn ``a[i] += x``
and ``a[i] -= x`` into differentiable atomic adds and subtractions
(NVIDIA/warp@a69d061).  For any other operator on an array whose dtype is one
of ``warp.types.atomic_types`` (float16/32/64, 32- and 64-bit integers, and
their vectors, matrices and quaternions) it prints ``Warning: in-place op ...
is not differentiable`` and emits nothing: the statement is silently dropped,
so ``a[i] *= 3.0; a[i] /= 2.0`` leaves ``[2, 4]`` as it was.  1.3.x and 1.4.2
write ``[3, 6]``.  Arrays of other dtypes (int8, structs, ...) and subscripts
of local vectors and matrices were always rewritten as ``a[i] = a[i] op x``
and work.

Fixed upstream.  NVIDIA/warp#342, fixed in 1.4.2 (NVIDIA/warp@a02f499 on
main, 5232f780d on the 1.4 branch) by giving those statements the same
rewrite, with the warning printed only when ``warp.config.verbose`` is set.

How the fix works.  The code generator for augmented assignments is replaced
by a wrapper.  Statements that cannot be dropped (an operator of ``+``/``-``,
a target that is not a subscript, an ``adjoint[...]`` target in a custom
gradient) go straight to Warp's own generator.  For the others the wrapper
evaluates the right-hand side and the subscript as 1.4.x does, then emits the
assignment wherever Warp would have: for every array and for vector,
quaternion and matrix targets; anything else goes back to Warp's generator,
which raises its own error.  The generated code is 1.4.2's but for one
thing: 1.4.2 evaluates the right-hand side once before the rewrite and again
inside it, and the subscript's indices again for the load and the store, so
that ``a[i] *= f()`` calls ``f`` twice (NVIDIA/warp#1233, fixed in 1.12.1).
Such a bug must not come with the fix: every call in the right-hand side
and in the target's indices is evaluated once, before the rewrite, as
warp.augassign_single_evaluation does for Warp's own generator
(``_codegen.evaluated_once``); statements without calls there are 1.4.2's.

``Adjoint.eval`` dispatches through the class-level dict
``Adjoint.node_visitors``, which holds the function itself, so the wrapper is
installed both as the method and as that dict's item.  And Warp keys built
modules on a hash of the kernels' source, not of the code generated from it:
while the patch is applied, the hash of every kernel or function whose
source holds a statement it takes over (an augmented assignment to a
subscript with an operator other than ``+``/``-``) also covers this patch's
generator, and the modules Warp had already hashed are hashed again
(``_codegen.key_builds_apart``): patched builds live apart from unpatched
ones in both caches.

Not backported.  ``unpatch()`` puts the identical originals back, but a
module already loaded while patched keeps its corrected code in memory until
Warp hashes it again (a kernel added to it, ``wp.load_module``, a new
process); the journal has no step to run at undo.  Release notes of 1.4.2
also fix unrelated loops and printing; none of that is backported.

The probe.  ``a[i] *= 3.0; a[i] /= 2.0`` on ``[2, 4]`` on the CPU, which must
give ``[3, 6]``.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect, expect_same
from gpushim.patches.warp._codegen import evaluated_once, key_builds_apart

patch = Patch(
    id="warp.augassign_mul_div",
    affected=">=1.4.0,<1.4.2",
    fixed_in="1.4.2",
    issue="NVIDIA/warp#342",
    fix="NVIDIA/warp@a02f499 (in 1.4.2 as 5232f780d)",
    summary="a[i] *= x, a[i] /= x (and other in-place ops but += and -=) on array elements are silently skipped.",
)

# Mixed into the hash of every adjoint this patch may generate differently;
# a change to the generator below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.augassign_mul_div 2"

_EMIT_AUGASSIGN = Parameters("adj", "node")


@patch.applier
def _apply(warp, journal):
    import ast

    codegen, context = warp.codegen, warp.context
    needed = {
        codegen: ("Adjoint", "strip_reference", "is_array", "type_is_vector", "type_is_quaternion", "type_is_matrix"),
        codegen.Adjoint: ("emit_AugAssign", "node_visitors", "eval", "eval_subscript"),
        warp.types: ("atomic_types",),
        context: ("ModuleHasher", "user_modules", "Module"),
        context.Module: ("mark_modified",),
    }
    for owner, names in needed.items():
        for name in names:
            expect(owner, name)
    adjoint = codegen.Adjoint
    _EMIT_AUGASSIGN.check(adjoint.emit_AugAssign)
    emit_original = vars(adjoint).get("emit_AugAssign")
    expect_same(
        adjoint.node_visitors.get(ast.AugAssign),
        emit_original,
        "Adjoint.node_visitors[ast.AugAssign]",
        "Adjoint.emit_AugAssign",
    )

    strip_reference, is_array = codegen.strip_reference, codegen.is_array
    composite = (codegen.type_is_vector, codegen.type_is_quaternion, codegen.type_is_matrix)
    atomic_types = warp.types.atomic_types
    config = warp.config

    def may_be_dropped(node):
        """Whether 1.4.x may drop this statement; the subscript's type is only known while generating."""
        return (
            isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Subscript)
            and not isinstance(node.op, (ast.Add, ast.Sub))
            and getattr(node.target.value, "attr", None) != "adjoint"
        )

    def emit_augassign(wrapped, instance, args, kwargs):
        try:
            adj, node = (
                _EMIT_AUGASSIGN.bind(instance, *args, **kwargs)
                if instance is not None
                else _EMIT_AUGASSIGN.bind(*args, **kwargs)
            )
        except TypeError:
            return wrapped(*args, **kwargs)
        if not may_be_dropped(node):
            return wrapped(*args, **kwargs)
        with evaluated_once(adj, node) as node:
            lhs = node.target
            adj.eval(node.value)
            target, _ = adj.eval_subscript(lhs)
            target_type = strip_reference(target.type)
            if is_array(target_type):
                if config.verbose and target_type.dtype in atomic_types:
                    print(f"Warning: in-place op {node.op} is not differentiable")
            elif not any(test(target_type) for test in composite):
                return wrapped(adj, node) if instance is None else wrapped(node)
            adj.eval(ast.Assign(targets=[lhs], value=ast.BinOp(lhs, node.op, node.value)))

    installed = journal.wrap(adjoint, "emit_AugAssign", emit_augassign)
    journal.replace_item(adjoint.node_visitors, ast.AugAssign, installed)
    key_builds_apart(context, journal, _HASH_SALT, lambda tree: any(map(may_be_dropped, ast.walk(tree))))


@patch.prober
def _probe():
    """``a[i] *= 3.0; a[i] /= 2.0`` on ``[2, 4]`` must give ``[3, 6]``; 1.4.0 and 1.4.1 leave ``[2, 4]``.

    The kernel is defined anew at each call, which makes Warp hash its module
    again, so the answer follows the patch's current state; it runs on the CPU.
    """
    import numpy as np
    import warp

    warp.config.quiet = True
    warp.init()

    def scale(a):
        i = warp.tid()
        a[i] *= 3.0
        a[i] /= 2.0

    scale.__annotations__ = {"a": warp.array(dtype=warp.float32)}  # not a string: Warp 1.2 evaluates none
    scale = warp.kernel(scale)

    values = warp.array(np.array([2.0, 4.0], dtype=np.float32), device="cpu")
    warp.launch(scale, dim=2, inputs=[values], device="cpu")
    result = values.numpy().tolist()
    if result != [3.0, 6.0]:
        return f"a[i] *= 3.0; a[i] /= 2.0 on [2.0, 4.0] gives {result}, not [3.0, 6.0]"
    return None
