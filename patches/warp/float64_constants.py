"""Warp up to 1.12.0 rounds ``wp.float64(0.1)`` in a kernel to float32 (and ``wp.int64``/``wp.uint64`` to 32 bits).

What breaks.  A Python number in a kernel is a constant variable of type
float32 or int32, and ``wp.float64(c)`` converts that variable: the literal
is rounded to 32 bits before it is widened.  ``wp.float64(wp.PI)`` gives
3.1415927410125732 and ``wp.float64(0.1)`` 0.10000000149011612;
``wp.float64(1e-300)`` is 0.0, ``wp.uint64(0xFF51AFD7ED558CCD)`` keeps its
low 32 bits.  Nothing warns.  From 1.6.0 to 1.11.x ``-C`` of a
``wp.constant(wp.float64(...))`` folds into a float32 constant as well:
``wp.float64(-C)`` is rounded, and ``-C * x`` with a float64 ``x`` does not
compile (1.12.0 negates Warp scalars into their own type).

Fixed upstream.  NVIDIA/warp#485, fixed by the branch merged as
NVIDIA/warp@0d3e1ea17 (in 1.13.0; in 1.12.1 as the commits 4c710623f to
27d1b29be, whose changelog entry is 282b5ba2f): a 64-bit scalar constructor
called with one constant argument emits a variable of its own type set to the
literal.  As released in 1.12.1 the shortcut also caught ``neg``, so the
first ``-C`` of a ``wp.constant(wp.float64(...))`` in a kernel lost its sign
(NVIDIA/warp#1540, fixed by
NVIDIA/warp@5d3726bd0 in 1.15.0, backported alone to 1.12.1-1.14.x by
``warp.float64_constant_sign``).  This patch gives 1.15.0's combined
behaviour; every 1.x release before 1.12.1 has the bug (checked from 1.0.0).

How the fix works.  ``Adjoint.add_call`` is wrapped.  A call of the builtin
``float64``, ``int64`` or ``uint64`` (the builtin whose native function is
named as the type it returns, as 1.15.0 asks) with one positional argument
holding a constant int or float (not NaN, not a bool) gets a new variable of
that type, assigned the literal as 1.15.0's ``constant_str`` spells it
(``ll``/``ull`` suffixes, ``INFINITY``); everything else goes to Warp.
Releases before 1.6.0 never fold ``-0.1`` into a constant, and later ones do
not fold ``-inf``: the wrapper remembers the result of ``neg`` applied to
such a constant, so ``wp.float64(-0.1)`` is exact too, without making that
result a constant (which would forbid reassigning it in a dynamic loop).
Where the release folds ``-c`` (from 1.6.0), ``Adjoint.emit_UnaryOp`` is
wrapped, in ``Adjoint.node_visitors`` too, through which ``Adjoint.eval``
dispatches: as in 1.15.0, only a constant Python number is folded, and the
negation of any other constant (a Warp scalar, a vector) is a call of
``neg``.

The module hash must differ: Warp keys built modules, in memory and in the
kernel cache, on a hash of the kernels' source, not of the code generated
from it, so a build made without the patch would be reused.  While the patch
is applied, the hash of every kernel or function that calls one of the three
constructors also covers this patch: from 1.4.0 per function
(``ModuleHasher.hash_adjoint``, which finds the constructors as Warp resolves
them, aliases included, and also salts functions referencing a 64-bit
``wp.constant`` or ``wp.static``, whose negation changes), before 1.4.0 per
module and the modules it references (``Module.hash_module``, which finds
the constructors by name).  From 1.4.0 every module already hashed is marked
modified (Warp's ``Module.mark_modified``) so that it is hashed again at its
next launch.  (``_codegen.key_builds_apart`` judges a function by its syntax
tree alone, cached by source; these patches need the constants and globals
that Warp resolves for each function, so they salt the hash themselves.)

Not backported.  1.12.1's reuse of the argument's variable for the result:
in 1.15.0 ``c = 0.1; wp.float64(c)`` retypes ``c`` itself, and a later
``c * 2.0`` fails to compile (a regression this patch does not bring); the
result gets a variable of its own, so the generated code differs from 1.15.0
by that dead constant.  1.15.0 also folds ``-inf`` into a constant (the
releases' ``constant_str`` cannot spell it; the value is the same), and turns
``-0.1`` into one constant, not two.  ``wp.neg(c)`` of a constant number is
taken as ``-c`` here, exact where 1.15.0 rounds it.  On 1.6.0-1.11.x a kernel
mixing ``-C`` of a float64 ``wp.constant`` with float32 values, which compiled
with the rounded constant, fails to compile as on 1.12.0 and later.  The
literal suffixes and ``INFINITY`` spellings of other constants' declarations (``constant_str``), keyword arguments
(``wp.float64(u=0.1)``), and the documentation.  Before 1.4.0 a module
loaded before ``gpushim.patch()`` keeps its build in memory until unloaded;
``unpatch()`` likewise leaves patched builds loaded.

The probe.  ``wp.float64(0.1)`` in a CPU kernel, which must give 0.1.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, TargetMismatch, expect
from gpushim.patches.warp._codegen import salted

patch = Patch(
    id="warp.float64_constants",
    affected="<1.12.1",
    fixed_in="1.12.1",
    issue="NVIDIA/warp#485 (and #1540)",
    fix="NVIDIA/warp@0d3e1ea17 (in 1.12.1 as 4c710623f..27d1b29be) and @5d3726bd0 (1.15.0)",
    summary="wp.float64(0.1), wp.int64(c), wp.uint64(c) of a constant in a kernel round it to 32 bits first.",
)

# Mixed into the hash of every kernel or function this patch may generate differently;
# a change to the code it generates must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.float64_constants 1"

_WIDE = ("float64", "int64", "uint64")
_EMIT_UNARYOP = Parameters("adj", "node")
_HASH_ADJOINT = Parameters("adj")  # after self
# add_call's parameters in each release, with the place of the call's keyword arguments among them.
_ADD_CALLS = (
    (Parameters("adj", "func", "args", "kwargs", "type_args", min_outputs=None), 3),  # from 1.3.0
    (Parameters("adj", "func", "args", min_outputs=None, templates=None, kwds=None), 5),  # 1.1, 1.2
    (Parameters("adj", "func", "args", min_outputs=None, templates=[], kwds=None), 5),  # 1.0
)


def _literal(wide: type, raw: int | float) -> str:
    """``raw`` as a C++ literal of ``wide``, as 1.15.0's ``constant_str`` writes ``wide(raw)``."""
    import math

    if isinstance(raw, float):
        if math.isinf(raw):
            return "-INFINITY" if raw < 0 else "INFINITY"
        return repr(raw)
    return f"{raw}{'ull' if wide.__name__ == 'uint64' else 'll' if wide.__name__ == 'int64' else ''}"


def _number(value: object, scalars: tuple) -> int | float | None:
    """The Python int or float a constant holds (a Warp scalar's own value), None for anything else."""
    import math

    if type(value) in scalars:
        value = value.value
    if type(value) is bool or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _calls_constructor(tree, names: dict, wide: tuple) -> bool:
    """Whether ``tree`` calls a name spelled as one of the ``wide`` types, or bound to one in ``names``."""
    import ast

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = node.func
            name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
            if name in _WIDE or any(names.get(name) is type_ for type_ in wide):
                return True
    return False


@patch.applier
def _apply(warp, journal):
    import sys
    import weakref

    def internal(name):
        return sys.modules.get(f"warp._src.{name}") or sys.modules.get(f"warp.{name}")

    codegen, context, types = internal("codegen"), internal("context"), internal("types")
    adjoint = expect(codegen, "Adjoint", type)
    expect(codegen, "Var", type)
    expect(types, "scalar_types")
    wide = {name: expect(types, name, type) for name in _WIDE}
    for name in (*_WIDE, "neg"):
        function = expect(context, "builtin_functions", dict).get(name)
        if function is None or not function.is_builtin() or function.native_func != name:
            raise TargetMismatch(f"Warp has no builtin {name}")
    bind, keywords_at = _binding(expect(adjoint, "add_call", callable))
    Var, scalars = codegen.Var, tuple(types.scalar_types)

    negated = weakref.WeakKeyDictionary()  # a neg() result -> the constant it stands for

    def constant_of(var):
        if not isinstance(var, Var):
            return None
        if var.constant is not None:
            return _number(var.constant, scalars)
        return negated.get(var)

    def patched_add_call(wrapped, adj, args, kwargs):
        try:
            bound = bind(adj, *args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)
        func, call_args = bound[1], bound[2]
        name = func.key
        if bound[keywords_at] or len(call_args) != 1 or not func.is_builtin() or func.native_func != name:
            return wrapped(*args, **kwargs)
        value = constant_of(call_args[0])
        if value is None:
            return wrapped(*args, **kwargs)
        if name in wide:
            output = adj.add_var(wide[name])
            adj.add_forward(f"var_{output} = {_literal(wide[name], value)};")
            return output
        output = wrapped(*args, **kwargs)
        if name == "neg" and isinstance(output, Var) and output.constant is None:
            negated[output] = -value
        return output

    journal.wrap(adjoint, "add_call", patched_add_call)
    if "add_constant" in expect(adjoint, "emit_UnaryOp", callable).__code__.co_names:  # it folds -c, from 1.6.0
        _negate_only_numbers(adjoint, journal)
    if hasattr(context, "ModuleHasher"):
        _salt_adjoints(context, wide, journal)
    else:
        _salt_modules(context, tuple(wide.values()), journal)


def _negate_only_numbers(adjoint, journal):
    """From 1.6.0: ``-c`` folds into a constant for a finite Python number only, as in 1.15.0; else ``neg``."""
    import ast
    import math

    _EMIT_UNARYOP.check(adjoint.emit_UnaryOp)
    released = vars(adjoint).get("emit_UnaryOp")
    if adjoint.node_visitors.get(ast.UnaryOp) is not released:
        raise TargetMismatch("Adjoint.node_visitors[ast.UnaryOp] is not Adjoint.emit_UnaryOp")

    def emit_unaryop(wrapped, instance, args, kwargs):
        try:
            adj, node = _EMIT_UNARYOP.bind(*((instance,) if instance is not None else ()), *args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)
        if not isinstance(node.op, ast.USub):
            return wrapped(*args, **kwargs)
        operand = adj.eval(node.operand)
        value = operand.constant
        if isinstance(value, (int, float)) and math.isfinite(value):
            return adj.add_constant(-value)
        return adj.add_builtin_call("neg", [operand])

    installed = journal.wrap(adjoint, "emit_UnaryOp", emit_unaryop)
    journal.replace_item(adjoint.node_visitors, ast.UnaryOp, installed)


def _binding(add_call):
    """How to bind a call of ``add_call``, and where the bound arguments hold the call's keyword arguments."""
    for parameters, keywords_at in _ADD_CALLS:
        try:
            parameters.check(add_call)
        except TargetMismatch:
            continue
        return parameters.bind, keywords_at
    raise TargetMismatch(f"Adjoint.add_call takes none of {' or '.join(f'({p})' for p, _ in _ADD_CALLS)}")


def _salt_adjoints(context, wide, journal):
    """From 1.4.0: the hash of each kernel or function that calls a 64-bit scalar constructor, or references a
    constant of a 64-bit scalar type (whose negation the patch emits as ``neg``), covers the patch."""
    hasher = expect(context, "ModuleHasher", type)
    _HASH_ADJOINT.check(expect(hasher, "hash_adjoint", callable), method=True)
    expect(context, "Module.mark_modified", callable)
    wide_types = set(wide.values())

    def changed(adj) -> bool:
        constants, types, _ = adj.get_references()
        values = [*constants.values(), *getattr(adj, "resolved_static_expressions", {}).values()]
        return bool(wide_types & set(types)) or any(type(value) in wide_types for value in values)

    def hash_adjoint(wrapped, instance, args, kwargs):
        digest = wrapped(*args, **kwargs)
        (adj,) = _HASH_ADJOINT.bind(*args, **kwargs)
        return salted(digest, _HASH_SALT) if changed(adj) else digest

    journal.wrap(hasher, "hash_adjoint", hash_adjoint)
    for module in list(expect(context, "user_modules", dict).values()):
        hashed = vars(module)  # a hasher up to 1.5, hashers by device from 1.6
        if hashed.get("hasher") is not None or hashed.get("hashers"):
            module.mark_modified()


def _salt_modules(context, wide, journal):
    """Before 1.4.0: the hash of each module whose kernels or functions, or those of a module
    they reference, call one of the three constructors by name covers the patch."""
    module_type = expect(context, "Module", type)
    expect(module_type, "hash_module", callable)

    def constructs(module, seen):
        seen.add(module)
        for function in [*module.kernels.values(), *module.functions.values()]:
            adj = getattr(function, "adj", None)
            if adj is not None and _calls_constructor(adj.tree, getattr(adj.func, "__globals__", {}), wide):
                return True
        return any(constructs(other, seen) for other in module.references if other not in seen)

    def hash_module(wrapped, instance, args, kwargs):
        digest = wrapped(*args, **kwargs)
        return salted(digest, _HASH_SALT) if constructs(instance, set()) else digest

    journal.wrap(module_type, "hash_module", hash_module)


@patch.prober
def _probe():
    """``wp.float64(0.1)`` in a CPU kernel must give 0.1; 1.0.0 to 1.12.0 give 0.10000000149011612.

    The kernel is defined anew at each call, which makes Warp hash its module
    again, so the answer follows the patch's current state.
    """
    import warp

    warp.config.quiet = True
    warp.init()

    def tenth(out):
        out[0] = warp.float64(0.1)

    tenth.__annotations__ = {"out": warp.array(dtype=warp.float64)}  # not a string: Warp 1.2 evaluates none
    tenth = warp.kernel(tenth)

    out = warp.zeros(1, dtype=warp.float64, device="cpu")
    warp.launch(tenth, dim=1, inputs=[out], device="cpu")
    result = float(out.numpy()[0])
    if result != 0.1:
        return f"wp.float64(0.1) in a kernel gives {result!r}, not 0.1"
    return None
