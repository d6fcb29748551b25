"""Writes to a component of an array element have no gradient (Warp 1.x before 1.14.0; patched from 1.6.0).

What breaks.  ``y[i].y = 2.0 * x[i]``, ``y[i][k] = v``, ``m[i][r, c] = v``
and ``s[i].field = v`` (struct fields, nested ones included) store the value
through ``indexref`` and ``store``, whose adjoints do nothing.  Under a
``wp.Tape``, ``tape.backward()`` leaves the gradients of everything the right
side was computed from at zero: training silently stops learning through
those writes.  Run on the CPU: 1.5.1, 1.6.0, 1.9.1, 1.10.1, 1.11.1 and
1.13.0 give ``x.grad = [0, 0]`` for that first kernel seeded with ones,
1.14.0 gives ``[2, 2]``.  Some of those writes do not even compile:
``t[i].p = v`` raises on every release before 1.14.0, ``m[i][r, c] = v`` and
``t[i][k] = v`` on 1.6.0.

Fixed upstream.  NVIDIA/warp GH-583, GH-248 and GH-1174, fixed by
NVIDIA/warp@560ad813b (``git tag --contains``: v1.14.0 first).  Its
``Adjoint.emit_Assign`` lowers an assignment whose target is a chain of
attributes and subscripts into an element of a plain ``wp.array`` to one
store into that slot, ``wp::index(y, i).c[1] = v;``, with the reverse
statement ``wp::adj_array_store_slot(y, adj_y, adj_v, <lambda reaching the
slot>, i);``; ``warp/native/array.h`` gains that helper, which adds the
slot's gradient to the right side's adjoint and, for a write that
overwrites, clears it.

How the fix works.  ``Adjoint.emit_Assign`` (in ``warp.codegen`` up to 1.9,
``warp._src.codegen`` from 1.10) is wrapped, both as the method and as the
item of ``Adjoint.node_visitors`` that ``Adjoint.eval`` dispatches through.
The wrapper looks at the target's shape first, without generating code, and
accepts what 1.14.0 accepts: a chain rooted at a local name holding a
``wp.array`` (not an indexed or fabric array, nor one of 8- or 16-bit
integers) that takes all of the array's indices and then reaches a vector,
quaternion or matrix component, a transform's ``p`` or ``q``, or a struct
field that is not itself an array.  For those it evaluates the right side
(copied out of an array reference), and where its type is the slot's it
emits 1.14.0's two statements, indices evaluated in 1.14.0's order.
Anything else, a right side of another type included, goes to the
release's own code with the right side already evaluated, as 1.14.0 does.
An augmented assignment, which releases up to 1.12.0 rewrite into an
assignment (one whose target is also the left operand of its right side),
stays the release's: 1.14.0 does not change them either.
On 1.6.0 to 1.12.0 warp.augassign_single_evaluation applies too: it
generates augmented assignments, this patch plain ones, and they meet only
in such a rewrite, which this patch leaves to the release; together they
give 1.14.0's values and gradients, each call run once
(tests/warp/test_assignment_composition.py).

The helper goes into the generated module: ``ModuleBuilder.codegen`` is
wrapped so that a module whose source calls ``wp::adj_array_store_slot``
gets the helper's definition right after ``#include "builtin.h"`` (``_codegen.add_native_helper``); other
modules' source is the release's, byte for byte.  The helper follows the
release's own ``adj_array_store``: on 1.13.0, which clears an overwritten
element's gradient (unless the array retains it), it clears the slot as
1.14.0 does (that clearing came with NVIDIA/warp@63fd480f7, GH-1062); the
releases before accumulate without clearing, and so does the helper there.

The module hash must differ, since the code generated changes and not the
source Warp hashes: while the patch is applied, every kernel or
function with an assignment to a chain of two or more attributes and
subscripts from a name is keyed on this patch too
(``_codegen.key_builds_apart``), and patched and unpatched builds never
serve each other, in memory or in a shared kernel cache directory.

Not backported.  Releases before 1.6.0, which have the bug too (run: 1.0.0,
1.0.2, 1.1.0, 1.4.0 and 1.5.1 give zeros): they have no ``type_is_transformation`` to reach a
transform's fields, 1.4.x no ``non_atomic_types`` and 1.0.x to 1.3.x no
``ModuleHasher`` to key builds on; status says ``not-backported`` there.
Writes to a component of a local vector, quaternion or matrix are right
from 1.4.0 and warp.inplace_adjoints' before: what stays wrong there is the
write to a component of an array element.  Also 1.14.0's
check of the slot's gradient in ``verify_fp`` builds
(``FP_VERIFY_ADJ_SLOT``), and 1.13.0's clearing of overwritten gradients on
1.6.0 to 1.12.x, a change of its own.  ``unpatch()`` puts the originals
back, but a module loaded while patched keeps its build until Warp hashes
it again.

The probe.  ``y[i].y = 2.0 * x[i]`` on the CPU under a tape, seeded with
ones, which must give ``x.grad = [2, 2]``.
"""

from __future__ import annotations

import ast
import sys

from gpushim import Parameters, Patch, TargetMismatch, expect
from gpushim.patches.warp._codegen import add_native_helper, assign_evaluated, codegen_and_context, key_builds_apart

patch = Patch(
    id="warp.component_write_adjoint",
    affected=">=1.6.0,<1.14.0",
    fixed_in="1.14.0",
    issue="NVIDIA/warp GH-583, GH-248, GH-1174",
    fix="NVIDIA/warp@560ad813b",
    not_backported={
        ">=1.0.0,<1.6.0": "Warp before 1.6.0 lacks what the backport builds on (type_is_transformation, "
        "non_atomic_types, ModuleHasher)"
    },
    summary="Assigning to a component or field of an array element (y[i].x = v) drops the gradient of v.",
)

# Mixed into the hash of every adjoint this patch may generate differently;
# a change to the code generated below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.component_write_adjoint 1"

_EMIT_ASSIGN = Parameters("adj", "node")

_SLOT_STORE = "wp::adj_array_store_slot("

# The reverse of a slot store: the slot's gradient, in the adjoint array the tape passes or else in
# the array's own grad, is added to the right side's adjoint.  {clear} is how 1.13.0 clears it.
_HELPER = """
namespace wp
{{
template <typename T, typename Access, typename Slot, typename... Indices>
inline CUDA_CALLABLE void adj_array_store_slot(
    const array_t<T>& buf, const array_t<T>& adj_buf, Slot& adj_value, Access access, Indices... indices)
{{
    if (adj_buf.data)
    {{
        Slot& slot = access(index(adj_buf, indices...));
        adj_value += slot;{clear_adjoint}
    }}
    else if (buf.grad)
    {{
        Slot& slot = access(index_grad(buf, indices...));
        adj_value += slot;{clear_grad}
    }}
}}
}} // namespace wp
"""
_CLEARING = {
    "clear_adjoint": "\n        if (buf.grad && adj_buf.data == buf.grad && !(buf.flags & ARRAY_FLAG_RETAIN_GRAD))"
    "\n            slot = Slot{};",
    "clear_grad": "\n        if (!(buf.flags & ARRAY_FLAG_RETAIN_GRAD))\n            slot = Slot{};",
}


def _chain(target):
    """The attributes and subscripts of an assignment target, outermost first, and the node they start from."""
    steps = []
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        steps.append(target)
        target = target.value
    return target, steps[::-1]


def _subscript(node: ast.Subscript) -> ast.AST:
    """What ``node`` subscripts with; Python 3.8 wraps it in an ``ast.Index``."""
    if sys.version_info < (3, 9) and isinstance(node.slice, ast.Index):
        return node.slice.value
    return node.slice


def _may_write_a_slot(node) -> bool:
    """Whether ``node`` is an assignment this patch may generate: a chain of two or more steps from a name."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return False
    root, steps = _chain(node.targets[0])
    return isinstance(root, ast.Name) and len(steps) >= 2


class _Lowering:
    """1.14.0's lowering of slot writes, on one release's code generator and types."""

    def __init__(self, codegen, types, config):
        self.codegen, self.types, self.config = codegen, types, config
        if hasattr(types, "matches_array_class"):
            self.plain_array = lambda t: types.matches_array_class(t, types.array)
        else:  # before 1.12, array types are instances of their class
            self.plain_array = lambda t: isinstance(t, types.array)

    def plan(self, adj, target):
        """(root, array index nodes, access parts, slot type) of a slot write, or None; generates nothing.

        An access part is C++ text, or an index node to evaluate and emit in its place.
        """
        codegen, types = self.codegen, self.types
        root, steps = _chain(target)
        if not isinstance(root, ast.Name) or root.id == "wp":
            return None
        var = adj.symbols.get(root.id)
        if not isinstance(var, codegen.Var):
            return None
        array_type = codegen.strip_reference(var.type)
        if not self.plain_array(array_type) or array_type.dtype in types.non_atomic_types:
            return None
        indices, wanted = [], array_type.ndim
        while steps and wanted and isinstance(steps[0], ast.Subscript):
            index = _subscript(steps[0])
            elements = index.elts if isinstance(index, ast.Tuple) else [index]
            if len(elements) > wanted:
                return None
            indices += elements
            wanted -= len(elements)
            steps = steps[1:]
        if wanted or not steps:
            return None
        parts, slot = [], array_type.dtype
        for step in steps:
            found = self.step(step, slot)
            if found is None:
                return None
            step_parts, slot = found
            if slot is None:
                return None
            parts += step_parts
        return var, indices, parts, slot

    def step(self, step, dtype):
        """(access parts, type reached) of one attribute or subscript of a value of ``dtype``, or None."""
        types = self.types
        scalar = getattr(dtype, "_wp_scalar_type_", None)
        if isinstance(step, ast.Attribute):
            name = step.attr
            if types.type_is_vector(dtype):
                components = "xyzw"[: dtype._shape_[0]]
                if len(name) != 1 or name not in components:
                    return None
                return [f".c[{components.index(name)}]"], scalar
            if types.type_is_quaternion(dtype):
                return ([f".{name}"], scalar) if name in ("x", "y", "z", "w") else None
            if types.type_is_transformation(dtype):
                if scalar is None:
                    return None
                if name == "p":
                    return [".p"], types.vector(length=3, dtype=scalar)
                if name == "q":
                    return [".q"], types.quaternion(dtype=scalar)
                return None
            if isinstance(dtype, self.codegen.Struct) and name in dtype.vars:
                field = dtype.vars[name].type
                return None if types.is_array(field) else ([f".{name}"], field)
            return None
        if types.type_is_matrix(dtype):
            index = _subscript(step)
            if not isinstance(index, ast.Tuple) or len(index.elts) != 2:
                return None
            row, column = index.elts
            return [".data[", row, "][", column, "]"], scalar
        if types.type_is_vector(dtype) or types.type_is_quaternion(dtype) or types.type_is_transformation(dtype):
            index = _subscript(step)
            return (None if isinstance(index, ast.Tuple) else ["[", index, "]"]), scalar
        return None

    def emit(self, adj, node, original):
        """Generate ``node``, a slot write, as 1.14.0 does; ``original`` generates anything else."""
        codegen = self.codegen
        plan = self.plan(adj, node.targets[0])
        if plan is None:
            return original(adj, node)
        var, index_nodes, parts, slot = plan
        rhs = adj.eval(node.value)
        if isinstance(rhs, codegen.Var) and codegen.is_reference(rhs.type):
            rhs = adj.add_builtin_call("copy", [rhs])
        if not isinstance(rhs, codegen.Var) or not codegen.types_equal(codegen.strip_reference(rhs.type), slot):
            return assign_evaluated(adj, node, rhs, original)
        indices = ", ".join(adj.eval(index).emit() for index in index_nodes)
        access = "".join(part if isinstance(part, str) else adj.eval(part).emit() for part in parts)
        array, value = var.emit(), rhs.emit()
        adj.add_forward(f"wp::index({array}, {indices}){access} = {value};")
        adj.add_reverse(
            f"{_SLOT_STORE}{array}, {var.emit_adj()}, {rhs.emit_adj()}, "
            f"[&](auto& _e) -> auto& {{ return _e{access}; }}, {indices});"
        )
        if adj.builder_options.get("verify_autograd_array_access", self.config.verify_autograd_array_access):
            var.mark_write(kernel_name=adj.fun_name, filename=adj.filename, lineno=adj.lineno + adj.fun_lineno)
        return None


@patch.applier
def _apply(warp, journal):
    codegen, context = codegen_and_context(warp)
    types = sys.modules[codegen.__name__.rpartition(".")[0] + ".types"]
    needed = {
        codegen: ("Adjoint", "Var", "Struct", "strip_reference", "is_reference", "types_equal"),
        codegen.Adjoint: ("emit_Assign", "node_visitors", "eval", "add_builtin_call", "add_forward", "add_reverse"),
        codegen.Var: ("emit", "emit_adj", "mark_write"),
        types: (
            "array",
            "non_atomic_types",
            "is_array",
            "vector",
            "quaternion",
            "type_is_vector",
            "type_is_quaternion",
            "type_is_matrix",
            "type_is_transformation",
        ),
        warp.config: ("verify_autograd_array_access",),
    }
    for owner, names in needed.items():
        for name in names:
            expect(owner, name)
    adjoint = codegen.Adjoint
    _EMIT_ASSIGN.check(adjoint.emit_Assign)
    emit_original = vars(adjoint).get("emit_Assign")
    if adjoint.node_visitors.get(ast.Assign) is not emit_original:
        raise TargetMismatch("Adjoint.node_visitors[ast.Assign] is not Adjoint.emit_Assign")

    lowering = _Lowering(codegen, types, warp.config)
    clearing = _CLEARING if hasattr(types, "ARRAY_FLAG_RETAIN_GRAD") else dict.fromkeys(_CLEARING, "")
    helper = _HELPER.format(**clearing)

    def emit_assign(wrapped, instance, args, kwargs):
        try:
            adj, node = (
                _EMIT_ASSIGN.bind(instance, *args, **kwargs)
                if instance is not None
                else _EMIT_ASSIGN.bind(*args, **kwargs)
            )
        except TypeError:
            return wrapped(*args, **kwargs)
        rewritten = isinstance(node.value, ast.BinOp) and node.value.left is node.targets[0]  # an augmented one
        if rewritten or not _may_write_a_slot(node):
            return wrapped(*args, **kwargs)

        def release(adj, node):
            return wrapped(node) if instance is not None else wrapped(adj, node)

        return lowering.emit(adj, node, release)

    installed = journal.wrap(adjoint, "emit_Assign", emit_assign)
    journal.replace_item(adjoint.node_visitors, ast.Assign, installed)
    add_native_helper(codegen, context, journal, _SLOT_STORE, helper)
    key_builds_apart(context, journal, _HASH_SALT, lambda tree: any(map(_may_write_a_slot, ast.walk(tree))))


@patch.prober
def _probe():
    """``y[i].y = 2.0 * x[i]`` under a tape, seeded with ones, must give ``x.grad = [2, 2]``, not zeros.

    The kernel is defined anew at each call, which makes Warp hash its module
    again, so the answer follows the patch's current state; it runs on the CPU.
    """
    import numpy as np
    import warp

    warp.config.quiet = True
    warp.init()

    def component(x, y):
        i = warp.tid()
        y[i].y = 2.0 * x[i]

    component.__annotations__ = {"x": warp.array(dtype=warp.float32), "y": warp.array(dtype=warp.vec3)}
    component = warp.kernel(component)

    x = warp.array(np.array([1.0, 2.0], dtype=np.float32), device="cpu", requires_grad=True)
    y = warp.zeros(2, dtype=warp.vec3, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(component, dim=2, inputs=[x, y], device="cpu")
    tape.backward(grads={y: warp.array(np.ones((2, 3), dtype=np.float32), dtype=warp.vec3, device="cpu")})
    result = x.grad.numpy().tolist()
    if result != [2.0, 2.0]:
        return f"y[i].y = 2.0 * x[i] under a tape, seeded with ones, gives x.grad = {result}, not [2.0, 2.0]"
    return None
