"""``wp.static(i)`` inside ``for i in range(...)`` reads a module-level ``i`` (Warp 1.4.0 to 1.11.0).

What breaks.  When a kernel or ``@wp.func`` is declared, Warp evaluates each
``wp.static(...)`` it can right away (``Adjoint.replace_static_expressions``)
with the function's globals, and puts the value into the syntax tree.  An
expression over the index of an enclosing unrolled loop should wait for code
generation, where the index is a constant of each iteration; but when the
module also has a global of that name, the declaration-time evaluation
succeeds with the global.  Any script or notebook whose earlier ``for i in
...`` left an ``i`` behind gets ``out[i] = wp.static(i * 10)`` as ``[600,
600, 600]`` (the leftover ``i`` is 60) instead of ``[0, 10, 20]``, silently.
``wp.static`` is new in 1.4.0.

Fixed upstream.  NVIDIA/warp#1139, fixed by NVIDIA/warp@11764fd9b (on main,
in 1.12.0) and c7164a6c2 (``git tag --contains``: v1.11.1 first): the
declaration-time pass leaves a ``wp.static`` call whose expression names an
enclosing ``for`` loop's variable for code generation.  Run: 1.3.3 has no
``wp.static``; 1.4.0, 1.4.1 and 1.11.0 give ``[600, 600, 600]``; 1.11.1
gives ``[0, 10, 20]``.

How the fix works.  ``Adjoint.replace_static_expressions`` is wrapped: before
Warp's pass runs, the wrapper finds the calls whose first argument (or
keyword) names the target of a ``for`` loop around them, as 1.11.1 does,
and while the pass runs, ``Adjoint.evaluate_static_expression`` raises for
those calls.  Warp's pass already treats an expression it cannot evaluate at
declaration as one for code generation (from 1.5, by marking the adjoint
``has_unresolved_static_expressions``), which is how 1.11.1 leaves them too.
Code generation evaluates them as released, with the loop's constant index
in scope.  The module hash of every adjoint with such a ``wp.static`` call
differs while the patch is applied, in memory and in the kernel cache
directory (``_codegen.key_builds_apart``): the value Warp hashes may be the
same (a leftover ``i`` of 2 and a loop's last index of 2), the code is not.

Not backported.  A kernel declared before the patch was applied keeps the
value its declaration took, until it is declared again; its module hash is
the release's.  ``wp.static`` imported under another name is deferred but
not told apart in the hash.

The probe.  A module-level ``i = 60``, then a kernel whose ``for i in
range(3)`` writes ``wp.static(i * 10)``, on the CPU: it must give ``[0, 10,
20]``.
"""

from __future__ import annotations

import ast
import threading

from gpushim import Parameters, Patch, expect
from gpushim.patches.warp._codegen import codegen_and_context, key_builds_apart

patch = Patch(
    id="warp.static_loop_variable",
    affected=">=1.4.0,<1.11.1",
    fixed_in="1.11.1",
    issue="NVIDIA/warp#1139",
    fix="NVIDIA/warp@c7164a6c2 (11764fd9b on main)",
    summary="wp.static() of a for loop's variable reads a module-level variable of the same name.",
)

# Mixed into the hash of every adjoint this patch may generate differently;
# a change to the code below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.static_loop_variable 1"

_ADJ = Parameters("adj")
_NODE = Parameters("adj", "node")

_deferring = threading.local()  # per thread, the calls the declaration-time pass must leave


class _LoopVariable(Exception):
    """Raised for a call that names a loop's variable, so that Warp's pass leaves it to code generation."""


def _loop_calls(tree) -> list:
    """The calls whose first argument or keyword names the variable of a ``for`` loop around them."""
    found = []

    def visit(node, loop_names):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            loop_names = loop_names | {node.target.id}
        if isinstance(node, ast.Call) and loop_names:
            expression = node.args[0] if node.args else node.keywords[0].value if node.keywords else None
            if expression is not None and loop_names & {
                name.id for name in ast.walk(expression) if isinstance(name, ast.Name)
            }:
                found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child, loop_names)

    visit(tree, frozenset())
    return found


def _changes(tree) -> bool:
    """Whether the tree keeps a ``wp.static`` call over a loop's variable for code generation."""
    return any(
        isinstance(call.func, ast.Attribute) and call.func.attr == "static" or getattr(call.func, "id", "") == "static"
        for call in _loop_calls(tree)
    )


def _replace_static_expressions(wrapped, instance, args, kwargs):
    (adj,) = _ADJ.bind(*(args if instance is None else (instance, *args)), **kwargs)
    previous = vars(_deferring).get("calls", frozenset())
    _deferring.calls = frozenset(_loop_calls(adj.tree))
    try:
        return wrapped(*args, **kwargs)
    finally:
        _deferring.calls = previous


def _evaluate_static_expression(wrapped, instance, args, kwargs):
    _, node = _NODE.bind(*(args if instance is None else (instance, *args)), **kwargs)
    if node in vars(_deferring).get("calls", ()):
        raise _LoopVariable(node)
    return wrapped(*args, **kwargs)


@patch.applier
def _apply(warp, journal):
    codegen, context = codegen_and_context(warp)
    adjoint = expect(codegen, "Adjoint", type)
    _ADJ.check(expect(adjoint, "replace_static_expressions", callable, own=True))
    _NODE.check(expect(adjoint, "evaluate_static_expression", callable, own=True))
    journal.wrap(adjoint, "replace_static_expressions", _replace_static_expressions)
    journal.wrap(adjoint, "evaluate_static_expression", _evaluate_static_expression)
    key_builds_apart(context, journal, _HASH_SALT, _changes)


@patch.prober
def _probe():
    """A leftover ``i = 60`` must not reach ``wp.static(i * 10)`` in ``for i in range(3)``.

    The kernel is declared anew at each call, from a function whose globals
    are this module's with ``i = 60``, so the answer follows the patch's
    current state.
    """
    import types

    import warp

    if not hasattr(warp, "static"):
        return None  # before 1.4.0 there is no wp.static, and so no such bug
    warp.config.quiet = True
    warp.init()

    def scaled_index(out):
        for i in range(3):
            out[i] = warp.static(i * 10)

    leftover = types.FunctionType(scaled_index.__code__, {**globals(), "i": 60}, closure=scaled_index.__closure__)
    leftover.__annotations__ = {"out": warp.array(dtype=warp.int32)}
    kernel = warp.kernel(leftover)
    out = warp.zeros(3, dtype=warp.int32, device="cpu")
    warp.launch(kernel, dim=1, inputs=[out], device="cpu")
    result = out.numpy().tolist()
    if result != [0, 10, 20]:
        return f"wp.static(i * 10) in for i in range(3), with a module-level i = 60, gives {result}, not [0, 10, 20]"
    return None
