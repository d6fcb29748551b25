"""What the patches of Warp's code generator share: its modules, builds kept apart, single evaluation.

Each changes the code generated from a kernel's unchanged source, so
:func:`key_builds_apart` keeps its builds apart from the release's in Warp's
caches.  Those that only add the read of a reference where a generator
forgets it use :func:`load_operands`.  The two that replace or wrap ``Adjoint.emit_AugAssign``, in either
order, must each leave every call of a statement evaluated once
(NVIDIA/warp#1233): :func:`evaluated_once` gives them the statement with its
calls evaluated already.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import hashlib
import itertools
import sys
import threading
from types import ModuleType

import gpushim
from gpushim import Parameters, TargetMismatch, expect, expect_same

_HASH_ADJOINT = Parameters("adj")  # after self
_CODEGEN = Parameters("device")  # after self
_NODE = Parameters("adj", "node")


def codegen_and_context(warp) -> tuple[ModuleType, ModuleType]:
    """Warp's modules ``codegen`` and ``context``: ``warp.*`` up to 1.9, ``warp._src.*`` from 1.10."""
    context = sys.modules[expect(warp, "launch.__module__", str)]
    return sys.modules[context.__name__.rpartition(".")[0] + ".codegen"], context


def holds_call(node: ast.AST) -> bool:
    return any(isinstance(inner, ast.Call) for inner in ast.walk(node))


@contextlib.contextmanager
def evaluated_once(adj, node: ast.AugAssign):
    """``node`` with its value and each index of its target that holds a call evaluated now, once.

    The value is evaluated first, then the indices from the root of the target
    out, as 1.12.1 does.  Each result is bound to a symbol of its own, which
    the rewritten statement reads by name: however often a generator then
    evaluates those names, it emits nothing more.  The symbols are gone again
    when the block ends.  A statement without such calls comes back as it was.
    """
    names = []

    def once(expression: ast.expr) -> ast.expr:
        if not holds_call(expression):
            return expression
        value = adj.eval(expression)
        name = next(name for name in map("gpushim_once_{}".format, itertools.count()) if name not in adj.symbols)
        adj.symbols[name] = value
        names.append(name)
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), expression)

    def index(part: ast.AST) -> ast.AST:
        if isinstance(part, ast.Tuple):
            return _copy(part, elts=[index(element) for element in part.elts])
        if sys.version_info < (3, 9) and isinstance(part, ast.Index):
            return _copy(part, value=index(part.value))
        if isinstance(part, ast.expr) and not isinstance(part, ast.Slice):
            return once(part)
        return part  # slices, and Python 3.8's ExtSlice, as they are

    def target(node: ast.expr) -> ast.expr:
        if isinstance(node, ast.Subscript):
            root = target(node.value)
            return _copy(node, value=root, slice=index(node.slice))
        if isinstance(node, ast.Attribute):
            return _copy(node, value=target(node.value))
        return node

    try:
        value = once(node.value)
        yield _copy(node, target=target(node.target), value=value)
    finally:
        for name in names:
            adj.symbols.pop(name, None)


def _copy(node: ast.AST, **fields) -> ast.AST:
    if all(getattr(node, name) is new for name, new in fields.items()):
        return node
    rewritten = copy.copy(node)
    for name, new in fields.items():
        setattr(rewritten, name, new)
    return rewritten


def key_builds_apart(context, journal, salt: bytes, changes) -> None:
    """Key every adjoint whose syntax tree ``changes(tree)`` is true of on ``salt`` too, while the patch is applied.

    ``context`` is Warp's module of that name (``warp._src.context`` from 1.10).

    Warp keys built modules, in memory and in the kernel cache directory, on
    a hash of the kernels' source, not of the code generated from it: a
    kernel built without the patch (by an earlier process sharing the cache,
    or in this process before ``gpushim.patch()``) would be reused as it was.
    So the hash of such an adjoint also covers ``salt``, and modules Warp had
    already hashed are marked modified (Warp's own ``Module.mark_modified``)
    so that they are hashed again at their next launch.  Up to 1.4.0, which
    hashes a module in ``Module.hash_module``, the hash of a module that
    holds or references such an adjoint covers ``salt``, and modules already
    hashed are unloaded (Warp's own ``Module.unload``, as when a kernel is
    redefined).
    """
    scanned = {}  # source -> whether the patch may change its code; overloads share their source

    def changed(adj) -> bool:
        found = scanned.get(adj.source)
        if found is None:
            found = scanned[adj.source] = changes(adj.tree)
        return found

    if not hasattr(context, "ModuleHasher"):
        _key_modules_apart(context, journal, salt, changed)
        return
    _HASH_ADJOINT.check(context.ModuleHasher.hash_adjoint, method=True)

    def hash_adjoint(wrapped, instance, args, kwargs):
        digest = wrapped(*args, **kwargs)
        (adj,) = _HASH_ADJOINT.bind(*args, **kwargs)
        return salted(digest, salt) if changed(adj) else digest

    journal.wrap(context.ModuleHasher, "hash_adjoint", hash_adjoint)
    for module in list(context.user_modules.values()):
        hashed = vars(module)  # a hasher up to 1.5, hashers by device from 1.6
        if hashed.get("hasher") is not None or hashed.get("hashers"):
            module.mark_modified()


def salted(digest: bytes, salt: bytes) -> bytes:
    """Warp's ``digest`` of a build a patch changes, keyed on the patch's ``salt`` and on gpushim's version: an
    upgrade of gpushim may change what a patch generates."""
    return hashlib.sha256(digest + salt + f"gpushim {gpushim.__version__}".encode()).digest()


def _key_modules_apart(context, journal, salt: bytes, changed) -> None:
    """Up to 1.4.0: salt ``Module.hash_module`` of each module that holds or references an adjoint ``changed``."""
    module_class = expect(context, "Module", type)
    expect(module_class, "hash_module", callable, own=True)
    expect(module_class, "unload", callable, own=True)

    def adjoints(module):
        yield from (kernel.adj for kernel in module.kernels.values())
        for function in module.functions.values():
            for overload in itertools.chain(function.user_overloads.values(), function.user_templates.values()):
                yield overload.adj

    def reaches_change(module, visited) -> bool:
        visited.add(module)
        return any(map(changed, adjoints(module))) or any(
            reaches_change(reference, visited) for reference in module.references if reference not in visited
        )

    def hash_module(wrapped, instance, args, kwargs):
        digest = wrapped(*args, **kwargs)
        return salted(digest, salt) if reaches_change(instance, set()) else digest

    journal.wrap(module_class, "hash_module", hash_module)
    for module in list(context.user_modules.values()):
        if module.content_hash is not None:
            module.unload()


def assign_evaluated(adj, node: ast.Assign, value, emit):
    """``emit(adj, node)`` for ``node`` with its right side already evaluated to ``value``.

    The value is bound to a name no code can spell, which the statement
    handed to ``emit`` reads: the right side is not evaluated again.
    """
    name = "gpushim rhs"
    adj.symbols[name] = value
    try:
        read = ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node.value)
        return emit(adj, ast.copy_location(ast.Assign(targets=node.targets, value=read), node))
    finally:
        adj.symbols.pop(name, None)


_INCLUDE = '#include "builtin.h"\n'


def add_native_helper(codegen, context, journal, marker: str, helper: str) -> None:
    """Put ``helper`` (C++) after ``#include "builtin.h"`` in each generated module whose source holds ``marker``.

    ``ModuleBuilder.codegen`` is wrapped; other modules' source is the release's, byte for byte.
    """
    _CODEGEN.check(expect(context, "ModuleBuilder.codegen", callable), method=True)
    for header in ("cpu_module_header", "cuda_module_header"):
        if _INCLUDE not in expect(codegen, header, str):
            raise TargetMismatch(f"{codegen.__name__}.{header} does not include builtin.h")

    def module_codegen(wrapped, instance, args, kwargs):
        source = wrapped(*args, **kwargs)
        return source.replace(_INCLUDE, _INCLUDE + helper, 1) if marker in source else source

    journal.wrap(context.ModuleBuilder, "codegen", module_codegen)


def wrap_visitor(adjoint, journal, node_type: type, wrapper) -> None:
    """Wrap ``Adjoint.emit_<node_type>`` with ``wrapper``, and its item in ``Adjoint.node_visitors`` with it.

    ``Adjoint.eval`` dispatches through that class-level dict, which the
    releases fill with the very methods: a wrapper of the method alone would
    never be called.
    """
    name = f"emit_{node_type.__name__}"
    expect_same(
        adjoint.node_visitors.get(node_type),
        vars(adjoint).get(name),
        f"Adjoint.node_visitors[ast.{node_type.__name__}]",
        f"Adjoint.{name}",
    )
    journal.replace_item(adjoint.node_visitors, node_type, journal.wrap(adjoint, name, wrapper))


def load_operands(journal, adjoint, node_type, name: str, selects) -> None:
    """Have ``Adjoint.<name>``, the generator of ``node_type``, read the references it evaluates where ``selects`` says.

    While the generator runs for a node, ``selects(node)`` gives a function
    ``(operand, value)`` that ``Adjoint.eval`` asks of every node it evaluates
    for that generator, with the node's value; where it is true, the value
    goes through Warp's own ``Adjoint.load`` before the generator sees it.
    The generator is wrapped as a method and as the item of
    ``Adjoint.node_visitors`` through which ``Adjoint.eval`` dispatches.
    """
    for method in (name, "eval"):
        _NODE.check(expect(adjoint, method, callable, own=True))
    expect(adjoint, "load", callable, own=True)
    visitors = expect(adjoint, "node_visitors", dict)
    expect_same(
        visitors.get(node_type),
        vars(adjoint)[name],
        f"Adjoint.node_visitors[ast.{node_type.__name__}]",
        f"Adjoint.{name}",
    )
    generating = threading.local()  # per thread, what each node being generated selects, innermost last

    def bound(instance, args, kwargs):
        return _NODE.bind(*(args if instance is None else (instance, *args)), **kwargs)

    def generator(wrapped, instance, args, kwargs):
        _, node = bound(instance, args, kwargs)
        stack = vars(generating).setdefault("stack", [])
        stack.append(selects(node))
        try:
            return wrapped(*args, **kwargs)
        finally:
            stack.pop()

    def evaluate(wrapped, instance, args, kwargs):
        value = wrapped(*args, **kwargs)
        stack = vars(generating).get("stack")
        if stack:
            adj, node = bound(instance, args, kwargs)
            if stack[-1](node, value):
                value = adj.load(value)
        return value

    journal.replace_item(visitors, node_type, journal.wrap(adjoint, name, generator))
    journal.wrap(adjoint, "eval", evaluate)
