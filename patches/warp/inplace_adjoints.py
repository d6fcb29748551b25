"""Warp 1.x before 1.4.0 get the gradients of ``a[i] += x`` and ``v[k] = x`` wrong.

What breaks.  ``Adjoint.emit_AugAssign`` rewrites every ``t op= x`` into
``t = t op x``.  On an array element that is a load and a store, and the
store's adjoint adds the element's gradient to ``x``'s without clearing it,
so the load adds it to the element's own gradient once more: under a
``wp.Tape``, ``y[i] += 2.0 * x[i]`` seeded with ones leaves ``y.grad = 2``
where it must stay 1, and every gradient computed from ``y.grad`` upstream
doubles.  A write to a component of a local vector, quaternion or matrix
(``v[1] = 5.0 * x[i]``, ``v.y = ...``, ``m[0, 1] = ...``, ``m[1] = row``,
and ``v[1] += ...``, rewritten so) stores through ``index`` and ``store``,
whose adjoints do nothing: ``x.grad`` stays 0 where it must be 5.  Run on
the CPU: 1.0.0 and 1.1.0 (scratch venvs, no cell), 1.2.0, 1.3.3 give
``y.grad = 2`` and ``x.grad = 0``; 1.4.0 and 1.4.1 give 1 and 5.

Fixed upstream.  NVIDIA/warp@a69d061f6 (``a[i] += x`` and ``a[i] -= x``
on arrays of ``warp.types.atomic_types`` become ``atomic_add`` and
``atomic_sub``) and NVIDIA/warp@5a88c4bc7 (a component of a local vector,
quaternion or matrix is written by a new builtin ``assign`` that returns
the updated value, whose adjoint routes the gradient to the right side and
to the other components); ``git tag --contains``: v1.4.0 first for both.

How the fix works.  Both generators are wrapped, as methods and as items of
``Adjoint.node_visitors`` (``_codegen.wrap_visitor``).  ``a[i] += x`` and
``a[i] -= x`` on a name holding an array of one of 1.4.0's atomic dtypes,
with all of its indices, become the release's own ``atomic_add`` and
``atomic_sub``, the right side evaluated first, then the indices, as in
1.4.0; every other augmented assignment is the release's rewrite.  An
assignment to a subscript or component of a name holding a local vector,
quaternion or matrix of the right side's type (the row of a matrix too)
becomes ``gpushim_assign``, a helper of this patch that returns the updated
value and whose adjoint is 1.4.0's ``adj_assign``; the name then holds the
result, as 1.4.0 has it.  The helper goes into the generated module after
``#include "builtin.h"`` where the module calls it
(``_codegen.add_native_helper``).  Anything else, a right side of another
type included, goes to the release's own generator with the right side
already evaluated (``_codegen.assign_evaluated``).  Every kernel or
function whose source holds such a statement is hashed apart from the
release's builds while the patch is applied (``_codegen.key_builds_apart``).

Up to 1.3.3, this patch alone of the four on assignments applies:
warp.augassign_mul_div, warp.augassign_single_evaluation (both from 1.4.0)
and warp.component_write_adjoint (from 1.6.0, not backported before) do
not.  ``a[i] *= x`` and ``a[i] /= x`` stay the release's rewrite here,
which 1.4.2 restores after 1.4.0 drops them: this patch does not bring
1.4.0's bug (warp.augassign_mul_div) with its fix.  Each right side is
evaluated once on every path; a call in the index of a rewritten subscript
runs once for the load and once for the store, as every release before
1.12.1 runs it unpatched.  Writes to a component of an array element
(``y[i].y = x``, ``y[i][1] = x``) keep the release's ``indexref`` and
``store``, as in 1.4.0: their gradient is warp.component_write_adjoint's,
not backported to these releases.  Together with the releases' own forms,
each statement gives 1.14.0's values and gradients but those writes
(tests/warp/test_assignment_composition.py); warp.augassign_single_evaluation
and warp.component_write_adjoint say how the others compose from 1.4.0.

Not backported.  1.4.0's ``q.w`` on quaternions and the rest of its
component and indexing features; a write to a component of a struct's field
(``s.v[1] = x``) is the release's.  ``unpatch()`` leaves a module loaded
while patched as it is until Warp hashes it again.

The probe.  ``y[i] += 2.0 * x[i]`` and ``v[1] = 5.0 * x[i]`` on the CPU
under a tape, seeded with ones: ``y.grad`` must be 1 and ``x.grad`` 7.
"""

from __future__ import annotations

import ast
import sys

from gpushim import Parameters, Patch, expect
from gpushim.patches.warp._codegen import (
    add_native_helper,
    assign_evaluated,
    codegen_and_context,
    key_builds_apart,
    wrap_visitor,
)

patch = Patch(
    id="warp.inplace_adjoints",
    affected="<1.4.0",
    fixed_in="1.4.0",
    issue="Warp 1.4.0 changelog: array in-place op adjoints, local vec/mat/quat component gradients",
    fix="NVIDIA/warp@a69d061f6 and NVIDIA/warp@5a88c4bc7",
    summary="a[i] += x doubles the gradient of a, and v[k] = x on a local vector drops the gradient of x.",
)

# Mixed into the hash of every adjoint this patch may generate differently;
# a change to the code generated below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.inplace_adjoints 1"

_NODE = Parameters("adj", "node")

_CALL = "wp::gpushim_assign("

# 1.4.0's assign and adj_assign: the updated copy, and the adjoint split between the slot and the rest.
_HELPER = """
// gpushim warp.inplace_adjoints
namespace wp
{
template <unsigned Length, typename Type>
inline CUDA_CALLABLE Type& gpushim_slot(vec_t<Length, Type>& v, int i) { return v.c[i]; }

template <typename Type>
inline CUDA_CALLABLE Type& gpushim_slot(quat_t<Type>& q, int i) { return (&q.x)[i]; }

template <typename Whole, typename Type>
inline CUDA_CALLABLE Whole gpushim_assign(Whole whole, int i, Type value)
{
    gpushim_slot(whole, i) = value;
    return whole;
}

template <typename Whole, typename Type>
inline CUDA_CALLABLE void adj_gpushim_assign(
    Whole whole, int i, Type value, Whole& adj_whole, Type& adj_value, Whole adj_ret)
{
    adj_value += gpushim_slot(adj_ret, i);
    gpushim_slot(adj_ret, i) = Type(0);
    adj_whole = add(adj_whole, adj_ret);
}

template <unsigned Rows, unsigned Cols, typename Type>
inline CUDA_CALLABLE mat_t<Rows, Cols, Type> gpushim_assign(mat_t<Rows, Cols, Type> m, int row, int col, Type value)
{
    m.data[row][col] = value;
    return m;
}

template <unsigned Rows, unsigned Cols, typename Type>
inline CUDA_CALLABLE void adj_gpushim_assign(
    mat_t<Rows, Cols, Type> m, int row, int col, Type value,
    mat_t<Rows, Cols, Type>& adj_m, Type& adj_value, mat_t<Rows, Cols, Type> adj_ret)
{
    adj_value += adj_ret.data[row][col];
    adj_ret.data[row][col] = Type(0);
    adj_m = add(adj_m, adj_ret);
}

template <unsigned Rows, unsigned Cols, typename Type>
inline CUDA_CALLABLE mat_t<Rows, Cols, Type> gpushim_assign(
    mat_t<Rows, Cols, Type> m, int row, vec_t<Cols, Type> value)
{
    for (unsigned j = 0; j < Cols; ++j)
        m.data[row][j] = value.c[j];
    return m;
}

template <unsigned Rows, unsigned Cols, typename Type>
inline CUDA_CALLABLE void adj_gpushim_assign(
    mat_t<Rows, Cols, Type> m, int row, vec_t<Cols, Type> value,
    mat_t<Rows, Cols, Type>& adj_m, vec_t<Cols, Type>& adj_value, mat_t<Rows, Cols, Type> adj_ret)
{
    for (unsigned j = 0; j < Cols; ++j)
    {
        adj_value.c[j] += adj_ret.data[row][j];
        adj_ret.data[row][j] = Type(0);
    }
    adj_m = add(adj_m, adj_ret);
}
} // namespace wp
"""

# warp.types.atomic_types of 1.4.0, by name.
_ATOMIC_DTYPES = (
    "float16 float32 float64 int32 uint32 int64 uint64"
    " vec2i vec2ui vec2l vec2ul vec2h vec2f vec2d vec3i vec3ui vec3l vec3ul vec3h vec3f vec3d"
    " vec4i vec4ui vec4l vec4ul vec4h vec4f vec4d mat22h mat22f mat22d mat33h mat33f mat33d"
    " mat44h mat44f mat44d quath quatf quatd"
).split()


def _indices(target: ast.Subscript) -> list:
    index = target.slice
    if sys.version_info < (3, 9) and isinstance(index, ast.Index):
        index = index.value
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]


def _named_root(target) -> ast.Name | None:
    """The name a one-step subscript or attribute target starts from, or None."""
    if isinstance(target, (ast.Subscript, ast.Attribute)) and isinstance(target.value, ast.Name):
        return target.value
    return None


def _taken(node) -> bool:
    """Whether the patch may generate ``node``: ``a[i] += x``, ``a[i] -= x``, or a write to ``v[k]`` or ``v.c``."""
    if isinstance(node, ast.AugAssign):
        return isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.target, ast.Subscript)
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and _named_root(node.targets[0]) is not None


class _Lowering:
    """1.4.0's lowering of in-place array updates and component writes, on one release's code generator."""

    def __init__(self, warp, codegen):
        self.warp, self.codegen, self.types = warp, codegen, warp.types
        self.atomic = tuple(getattr(warp.types, name) for name in _ATOMIC_DTYPES if hasattr(warp.types, name))
        self.is_quaternion = getattr(warp.types, "type_is_quaternion", lambda t: False)  # from 1.3

    def symbol(self, adj, target):
        """The variable a one-step target's name holds, or None; generates nothing."""
        root = _named_root(target)
        var = adj.symbols.get(root.id) if root is not None else None
        return var if isinstance(var, self.codegen.Var) else None

    def augmented(self, adj, node, release) -> None:
        """``a[i] += x`` or ``a[i] -= x`` as 1.4.0 generates it; ``release`` generates anything else."""
        codegen = self.codegen
        array = self.symbol(adj, node.target)
        array_type = None if array is None else codegen.strip_reference(array.type)
        indices = _indices(node.target) if isinstance(node.target, ast.Subscript) else []
        if (
            array_type is None
            or not codegen.is_array(array_type)
            or array_type.dtype not in self.atomic
            or len(indices) != array_type.ndim
            or any(isinstance(index, ast.Slice) for index in indices)
        ):
            return release(adj, node)
        value = adj.load(adj.eval(node.value))
        evaluated = [adj.load(adj.eval(index)) for index in indices]
        operation = "atomic_add" if isinstance(node.op, ast.Add) else "atomic_sub"
        adj.add_builtin_call(operation, [array, *evaluated, value])
        if getattr(self.warp.config, "verify_autograd_array_access", False):  # from 1.3
            array.mark_write(kernel_name=adj.fun_name, filename=adj.filename, lineno=adj.lineno + adj.fun_lineno)
        return None

    def slot_type(self, whole_type, target):
        """The type a write through ``target`` into a local vector, quaternion or matrix stores, or None."""
        types = self.types
        scalar = getattr(whole_type, "_wp_scalar_type_", None)
        if isinstance(target, ast.Attribute):
            return scalar if types.type_is_vector(whole_type) else None
        indices = _indices(target)
        if any(isinstance(index, ast.Slice) for index in indices):
            return None
        if types.type_is_matrix(whole_type):
            return {1: types.vector(length=whole_type._shape_[1], dtype=scalar), 2: scalar}.get(len(indices))
        if types.type_is_vector(whole_type) or self.is_quaternion(whole_type):
            return scalar if len(indices) == 1 else None
        return None

    def assignment(self, adj, node, release) -> None:
        """A write to ``v[k]``, ``m[i, j]``, ``m[i]`` or ``v.c`` as 1.4.0 generates it; ``release`` anything else."""
        codegen = self.codegen
        target = node.targets[0]
        whole = self.symbol(adj, target)
        if whole is None or codegen.is_reference(whole.type):
            return release(adj, node)
        slot_type = self.slot_type(whole.type, target)
        if slot_type is None:
            return release(adj, node)
        value = adj.load(adj.eval(node.value))
        if not codegen.types_equal(codegen.strip_reference(value.type), slot_type):
            return assign_evaluated(adj, node, value, release)
        if isinstance(target, ast.Attribute):
            indices = [adj.vector_component_index(target.attr, whole.type)]
        else:
            indices = [adj.load(adj.eval(index)) for index in _indices(target)]
        out = adj.add_var(whole.type)
        arguments = ", ".join(var.emit() for var in (whole, *indices, value))
        adj.add_forward(f"{out.emit()} = {_CALL}{arguments});")
        adjoints = ", ".join(var.emit_adj() for var in (whole, value, out))
        adj.add_reverse(f"wp::adj_gpushim_assign({arguments}, {adjoints});")
        for name, var in adj.symbols.items():  # the name holds the result, as 1.4.0's does
            if var is whole:
                adj.symbols[name] = out
                break
        return None


def _generator(lowering_method):
    """A wrapper of a generator of assignments that hands the statements the patch takes to ``lowering_method``."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            adj, node = _NODE.bind(*(args if instance is None else (instance, *args)), **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)
        if not _taken(node):
            return wrapped(*args, **kwargs)

        def release(adj, node):
            return wrapped(adj, node) if instance is None else wrapped(node)

        return lowering_method(adj, node, release)

    return wrapper


@patch.applier
def _apply(warp, journal):
    codegen, context = codegen_and_context(warp)
    needed = {
        codegen: ("Adjoint", "Var", "strip_reference", "is_reference", "is_array", "types_equal"),
        codegen.Adjoint: ("eval", "load", "add_var", "add_forward", "add_reverse", "add_builtin_call"),
        codegen.Var: ("emit", "emit_adj"),
        warp.types: ("vector", "type_is_vector", "type_is_matrix"),
    }
    for owner, names in needed.items():
        for name in names:
            expect(owner, name)
    adjoint = codegen.Adjoint
    expect(adjoint, "vector_component_index", callable)
    for name in ("emit_AugAssign", "emit_Assign"):
        _NODE.check(expect(adjoint, name, callable, own=True))
    lowering = _Lowering(warp, codegen)
    wrap_visitor(adjoint, journal, ast.AugAssign, _generator(lowering.augmented))
    wrap_visitor(adjoint, journal, ast.Assign, _generator(lowering.assignment))
    add_native_helper(codegen, context, journal, _CALL, _HELPER)
    key_builds_apart(context, journal, _HASH_SALT, lambda tree: any(map(_taken, ast.walk(tree))))


@patch.prober
def _probe():
    """``y[i] += 2.0 * x[i]`` and ``v[1] = 5.0 * x[i]``, taped and seeded with ones: ``y.grad = 1``, ``x.grad = 7``.

    The releases before 1.4.0 give ``y.grad = 2`` and ``x.grad = 2``.  The
    kernel is defined anew at each call, which makes Warp hash its module
    again, so the answer follows the patch's current state; it runs on the CPU.
    """
    import numpy as np
    import warp

    warp.config.quiet = True
    warp.init()

    def inplace(x, y, z):
        i = warp.tid()
        y[i] += 2.0 * x[i]
        v = warp.vec3(0.0, 0.0, 0.0)
        v[1] = 5.0 * x[i]
        z[i] = v[1]

    floats = warp.array(dtype=warp.float32)
    inplace.__annotations__ = {"x": floats, "y": floats, "z": floats}  # not strings: Warp 1.2 evaluates none
    inplace = warp.kernel(inplace)

    def cpu(values):
        return warp.array(np.array(values, dtype=np.float32), device="cpu", requires_grad=True)

    x, y, z = cpu([1.0]), cpu([0.0]), cpu([0.0])
    tape = warp.Tape()
    with tape:
        warp.launch(inplace, dim=1, inputs=[x, y, z], device="cpu")
    tape.backward(grads={y: cpu([1.0]), z: cpu([1.0])})
    found = (y.grad.numpy().tolist(), x.grad.numpy().tolist())
    if found != ([1.0], [7.0]):
        return (
            f"y[i] += 2.0 * x[i]; v[1] = 5.0 * x[i]; z[i] = v[1] under a tape, seeded with ones,"
            f" gives y.grad = {found[0]} and x.grad = {found[1]}, not [1.0] and [7.0]"
        )
    return None
