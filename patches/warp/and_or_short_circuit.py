"""Warp up to 1.12.1 evaluates every operand of ``and`` and ``or`` in a kernel: ``if arr and arr[i]`` reads ``arr[i]``.

What breaks.  ``Adjoint.emit_BoolOp`` evaluates all operands first and
joins their values with ``&&`` or ``||`` in one C++ statement, so the
operands after the one that decides still run.  ``if arr and arr[i] == 0``
with ``arr`` None reads through a null pointer (a segfault on the CPU, an
illegal address on CUDA), ``i < n and a[i] > 0`` reads past the end, and a
call on the right (an atomic counter, a random draw) runs whatever the left
side says.  Python, and Warp's own documentation from 1.13.0, say the
operands after the deciding one are not evaluated.

Fixed upstream.  NVIDIA/warp#1329 (and #520), fixed by NVIDIA/warp@a72c39d4c
(merged as 5d8160906; ``git tag --contains``: v1.13.0 first), filed under
"Changed" in the docs: each operand after the first is evaluated only while
the result so far leaves the answer open.  Every release from 1.0.0 to
1.12.1 has the same eager generator.

How the fix works.  The patch is opt-in: code written for the released
behaviour may rely on every operand running (a counter on the right of
``and``), so it is off unless ``GPUSHIM_ENABLE`` names it
(``GPUSHIM_ENABLE=warp.and_or_short_circuit``), and its state is ``opt-in``
until then.  Turned on, kernels behave as on 1.13.0: the operands after the
deciding one are skipped, in the forward pass, in the backward pass's replay
of it and in the adjoints of those operands.  The generator of boolean
operations is wrapped (with its item in ``Adjoint.node_visitors``, through
which ``Adjoint.eval`` dispatches: ``_codegen.wrap_visitor``): for ``and``
and ``or`` it declares the result, assigns it the first operand, then
generates each further operand inside a C++ block guarded by the result so
far (``if (r) {`` for ``and``, ``if (!r) {`` for ``or``), whose adjoint code
is guarded alike, in the reverse order.  Every kernel or function whose
source holds ``and`` or ``or`` is hashed apart from the release's build while
the patch is applied (``_codegen.key_builds_apart``); before 1.4.0, where
Warp hashes a module once per load, a module loaded before the patch keeps
its build until Warp loads it again.

Not backported.  Nothing else of 1.13.0's code generator.  ``unpatch()``
leaves a module already loaded while patched as it is until Warp hashes it
again, as the other code-generator patches do.

The probe.  ``i > 0 and counted(c) > 0`` and ``i < 1 or counted(c) > 0`` at
``i = 0`` on the CPU, where ``counted`` adds 1 to ``c[0]``: ``c[0]`` must be 0.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect
from gpushim.patches.warp._codegen import codegen_and_context, key_builds_apart, wrap_visitor

patch = Patch(
    id="warp.and_or_short_circuit",
    affected="<1.13.0",
    fixed_in="1.13.0",
    issue="NVIDIA/warp#1329, NVIDIA/warp#520",
    fix="NVIDIA/warp@a72c39d4c",
    summary="and/or in a kernel evaluate every operand: if arr and arr[i] reads arr[i] when arr is None.",
    opt_in=True,
)

# Mixed into the hash of every adjoint this patch may generate differently;
# a change to the generator below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.and_or_short_circuit 1"

_EMIT_BOOLOP = Parameters("adj", "node")


def _joins(tree) -> bool:
    """Whether a source's syntax tree holds ``and`` or ``or``: the code the patch generates differently."""
    import ast

    return any(isinstance(node, ast.BoolOp) for node in ast.walk(tree))


def _short_circuit(adj, node):
    """Generate ``node``, an ``and`` or ``or``, evaluating each operand only while the result so far is open."""
    import ast

    joiner, guard = ("&&", "if ({}) {{") if isinstance(node.op, ast.And) else ("||", "if (!{}) {{")
    result = adj.add_var(bool)
    first = adj.load(adj.eval(node.values[0]))
    adj.add_forward(f"{result.emit()} = {first.emit()};")
    for operand in node.values[1:]:
        opened = guard.format(result.emit())
        adj.add_forward(opened)
        adj.add_reverse("}")  # the reverse pass is emitted backwards: this closes the block opened below
        adj.indent()
        value = adj.load(adj.eval(operand))
        adj.add_forward(f"{result.emit()} = {result.emit()} {joiner} {value.emit()};")
        adj.dedent()
        adj.add_forward("}")
        adj.add_reverse(opened)
    return result


def _emit_bool_op(wrapped, instance, args, kwargs):
    import ast

    try:
        adj, node = _EMIT_BOOLOP.bind(*(args if instance is None else (instance, *args)), **kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)
    if not isinstance(node.op, (ast.And, ast.Or)):
        return wrapped(*args, **kwargs)
    return _short_circuit(adj, node)


@patch.applier
def _apply(warp, journal):
    import ast

    codegen, context = codegen_and_context(warp)
    adjoint = expect(codegen, "Adjoint", type)
    for name in ("emit_BoolOp", "node_visitors", "eval", "load", "add_var", "add_forward", "add_reverse", "indent"):
        expect(adjoint, name)
    expect(adjoint, "dedent")
    expect(context, "user_modules")
    _EMIT_BOOLOP.check(adjoint.emit_BoolOp)
    wrap_visitor(adjoint, journal, ast.BoolOp, _emit_bool_op)
    key_builds_apart(context, journal, _HASH_SALT, _joins)


@patch.prober
def _probe():
    """``i > 0 and counted(c) > 0`` and ``i < 1 or counted(c) > 0`` at ``i = 0`` never call ``counted``.

    The kernel is defined anew at each call, which makes Warp hash its module
    again, so the answer follows the patch's current state; it runs on the CPU.
    """
    import warp

    warp.config.quiet = True
    warp.init()

    def counted(c):
        warp.atomic_add(c, 0, 1)
        return 1

    counted.__annotations__ = {"c": warp.array(dtype=warp.int32), "return": int}
    counted = warp.func(counted)

    def decided(c, out):
        i = warp.tid()
        if i > 0 and counted(c) > 0:
            out[0] = 1
        if i < 1 or counted(c) > 0:
            out[1] = 1

    decided.__annotations__ = {"c": warp.array(dtype=warp.int32), "out": warp.array(dtype=warp.int32)}
    decided = warp.kernel(decided)

    calls = warp.zeros(1, dtype=warp.int32, device="cpu")
    out = warp.zeros(2, dtype=warp.int32, device="cpu")
    warp.launch(decided, dim=1, inputs=[calls, out], device="cpu")
    count, values = int(calls.numpy()[0]), out.numpy().tolist()
    if (count, values) != (0, [0, 1]):
        return (
            f"i > 0 and counted(c) > 0, then i < 1 or counted(c) > 0, at i = 0 call counted {count} times"
            f" and give {values}, not 0 times and [0, 1]"
        )
    return None
