"""Warp 1.4.0, 1.4.2 to 1.15.x drop the updates of an unrolled loop's index reused by a later ``while`` or dynamic loop.

What breaks.  Warp unrolls ``for i in range(2)`` and records ``i`` as a
constant loop index, so that ``materialize_redefinitions`` never carries a
change of ``i`` across the iterations of an enclosing dynamic loop.  The
record outlives the unrolled loop: when a later ``while`` or dynamic ``for``
loop reuses ``i`` (``i = int(0); while i < 3: ...; i = i + 1``), or keeps
incrementing the leftover ``i``, its updates are not carried into the next
iteration, silently.  Upstream's example sums 31 with ``j`` and 0 with
``i``; ``i = i + 1`` three times from the leftover 1 gives 2, not 4.

Fixed upstream.  NVIDIA/warp#1534, fixed by NVIDIA/warp@4f90c8a3f
(``git tag --contains``: v1.16.0 first): ``materialize_redefinitions``
skips a recorded index only while its value at the loop's entry is still a
constant, and before a ``while`` or dynamic ``for`` loop the leftover
index constants its body assigns are replaced by mutable copies.

How the fix works.  Both halves, on the release's own methods.
``materialize_redefinitions`` is wrapped so that, during the call, the
names whose entry value is not a constant are out of the record of
constant indices (``loop_const_iter_symbols``), and put back after.  The
generators of ``while`` and ``for`` loops are wrapped, as methods and as
items of the class-level dict ``Adjoint.node_visitors`` through which
``Adjoint.eval`` dispatches: ``while`` promotes the constants before Warp
generates the loop; ``for`` notes its body, which ``begin_for``, called
only for a dynamic loop, promotes before the loop starts.  Promotion emits
Warp's own ``copy`` builtin, as 1.16.0 does.  The module hash of every
kernel or function whose loops assign a name that some ``for`` loop uses as
its index differs while the patch is applied, in memory and in the kernel
cache directory (``_codegen.key_builds_apart``).

Not backported.  1.16.0's tests and documentation.  1.4.0, which gives 0
for upstream's example too (run; 1.3.x and before give 31), from older
internals: it records constant indices only inside a dynamic loop, in a
set that each dynamic loop starts and ends
(``begin_record_constant_iter_symbols``), which the patch's wrappers do
not follow; status says ``not-backported`` there.  1.4.1 gives 31 but
raises "Error mutating a constant" where the leftover index is
incremented: a bug of its own, loud, and not in the range.  ``unpatch()``
leaves a module already loaded while patched as it is until Warp hashes it
again.

The probe.  Upstream's example on the CPU: ``acc`` over ``for i in
range(2)``, then ``i = wp.int32(0); while i < 3: acc = acc + 10; i = i + 1``,
which must give 31.
"""

from __future__ import annotations

import threading

from gpushim import Parameters, Patch, TargetMismatch, expect, expect_same
from gpushim.patches.warp._codegen import codegen_and_context, key_builds_apart

patch = Patch(
    id="warp.reused_loop_index",
    affected=">=1.4.2,<1.16.0",
    fixed_in="1.16.0",
    issue="NVIDIA/warp#1534",
    fix="NVIDIA/warp@4f90c8a3f",
    not_backported={"==1.4.0": "1.4.0 records constant loop indices only in dynamic loops, not where the patch looks"},
    summary="An unrolled range() loop's index reused by a later while or dynamic for loop loses its updates.",
)

# Mixed into the hash of every adjoint this patch may generate differently;
# a change to the code below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.reused_loop_index 1"

_NODE = Parameters("adj", "node")
_SYMBOLS = Parameters("adj", "symbols")
_ITER = Parameters("adj", "iter")

_fors = threading.local()  # per thread, the for loops being generated, innermost last: (adj, body)


def _stored_names(body) -> set:
    import ast

    return {
        node.id
        for statement in body
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }


def _changes(tree) -> bool:
    """Whether a loop of this tree assigns a name that a ``for`` loop of it uses as its index."""
    import ast

    loops = [node for node in ast.walk(tree) if isinstance(node, (ast.For, ast.While))]
    indices = {node.target.id for node in loops if isinstance(node, ast.For) and isinstance(node.target, ast.Name)}
    return any(_stored_names(loop.body) & indices for loop in loops)


@patch.applier
def _apply(warp, journal):
    import ast

    codegen, context = codegen_and_context(warp)
    adjoint = expect(codegen, "Adjoint", type)
    var = expect(codegen, "Var", type)
    for name in ("emit_While", "emit_For", "begin_for", "materialize_redefinitions", "node_visitors"):
        expect(adjoint, name)
    for node, name in ((ast.While, "emit_While"), (ast.For, "emit_For")):
        _NODE.check(getattr(adjoint, name))
        expect_same(
            adjoint.node_visitors.get(node),
            vars(adjoint).get(name),
            f"Adjoint.node_visitors[ast.{node.__name__}]",
            f"Adjoint.{name}",
        )
    _SYMBOLS.check(adjoint.materialize_redefinitions)
    _ITER.check(adjoint.begin_for)

    def constants(adj) -> set:
        record = vars(adj).get("loop_const_iter_symbols")
        if not isinstance(record, set):
            raise TargetMismatch(f"Adjoint.loop_const_iter_symbols is {type(record).__name__}, not a set")
        return record

    def promote(adj, body):
        record = constants(adj)
        for name in sorted(_stored_names(body) & record):
            value = adj.symbols.get(name)
            if isinstance(value, var) and value.constant is not None:
                adj.symbols[name] = adj.add_builtin_call("copy", [value])

    def bound(parameters, instance, args, kwargs):
        return parameters.bind(*(args if instance is None else (instance, *args)), **kwargs)

    def emit_while(wrapped, instance, args, kwargs):
        adj, node = bound(_NODE, instance, args, kwargs)
        promote(adj, node.body)
        return wrapped(*args, **kwargs)

    def emit_for(wrapped, instance, args, kwargs):
        adj, node = bound(_NODE, instance, args, kwargs)
        stack = vars(_fors).setdefault("stack", [])
        stack.append((adj, node.body))
        try:
            return wrapped(*args, **kwargs)
        finally:
            stack.pop()

    def begin_for(wrapped, instance, args, kwargs):
        adj, _ = bound(_ITER, instance, args, kwargs)
        stack = vars(_fors).get("stack")
        if stack and stack[-1][0] is adj:
            promote(adj, stack[-1][1])
        return wrapped(*args, **kwargs)

    def materialize_redefinitions(wrapped, instance, args, kwargs):
        adj, symbols = bound(_SYMBOLS, instance, args, kwargs)
        record = constants(adj)
        entered = {name for name in record if isinstance(symbols.get(name), var) and symbols[name].constant is None}
        record -= entered
        try:
            return wrapped(*args, **kwargs)
        finally:
            record |= entered

    for node, name, wrapper in ((ast.While, "emit_While", emit_while), (ast.For, "emit_For", emit_for)):
        journal.replace_item(adjoint.node_visitors, node, journal.wrap(adjoint, name, wrapper))
    journal.wrap(adjoint, "begin_for", begin_for)
    journal.wrap(adjoint, "materialize_redefinitions", materialize_redefinitions)
    key_builds_apart(context, journal, _HASH_SALT, _changes)


@patch.prober
def _probe():
    """Upstream's example gives 31; 1.4.2 to 1.15.x give 0.

    The kernel is defined anew at each call, which makes Warp hash its module
    again, so the answer follows the patch's current state; it runs on the CPU.
    """
    import warp

    warp.config.quiet = True
    warp.init()

    def same_name(out):
        acc = warp.int32(0)
        for i in range(2):
            acc = acc + i
        i = warp.int32(0)
        while i < 3:
            acc = acc + 10
            i = i + 1
        out[0] = acc

    same_name.__annotations__ = {"out": warp.array(dtype=warp.int32)}
    same_name = warp.kernel(same_name)

    out = warp.zeros(1, dtype=warp.int32, device="cpu")
    warp.launch(same_name, dim=1, inputs=[out], device="cpu")
    result = int(out.numpy()[0])
    if result != 31:
        return f"for i in range(2) adding i, then i reused by a while loop adding 10 three times gives {result}, not 31"
    return None
