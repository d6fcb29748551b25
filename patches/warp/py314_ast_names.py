"""Warp up to 1.6.2 cannot be imported on Python 3.14: ``warp.codegen`` names the ``ast`` classes 3.14 removed.

What breaks.  ``import warp`` imports ``warp.codegen``, whose ``Adjoint``
class body keys its table of node visitors on ``ast.Str``, ``ast.Num``,
``ast.NameConstant`` and ``ast.Ellipsis``; its ``emit_Constant`` and
``eval_num`` test nodes against them, and ``emit_String``, ``emit_Num`` and
``eval_num`` read a constant's ``n`` and ``s``.  Python 3.8 deprecated all of
these for ``ast.Constant`` and its ``value``; 3.14 removed them (with
``ast.Bytes``), so ``import warp`` raises ``AttributeError: module 'ast' has
no attribute 'Str'`` and Warp cannot be used at all.  Checked on the tags:
the same code from 1.0.0 to 1.6.2.

Fixed upstream.  NVIDIA/warp GH-531 (4d08e8714) and GH-561 (d339dead1),
both first in 1.7.0 (``git tag --contains``), which read ``ast.Constant``
and ``value`` alone.

How the fix works.  Right before ``warp.codegen`` executes, the five names
are lent to ``ast`` as the classes 3.13 had: subclasses of ``ast.Constant``
whose ``isinstance`` asks the type of a constant's value (a ``bool`` is no
``Num``).  Once the module executed, they are withdrawn, and ``warp.codegen``
alone is given a view of ``ast`` that holds them and reads everything else
through, so that the release's own ``emit_Constant`` dispatches as on 3.13;
``emit_String`` and ``emit_Num`` get the node with ``n`` and ``s`` reading
its ``value``, and ``eval_num`` answers a number (or a negated one) as the
release does before it reads ``n``.  The generated code is the release's on
3.13: 1.7.0 also stopped sharing one variable between equal numbers, which
this patch does not take over.  The gate is on what 3.14 removed, not on its
version: ``ast.Constant.n`` and ``.s``, the two that can be looked up without
running code (3.12 and 3.13 hand the classes out through a module
``__getattr__`` that warns); where ``ast`` still holds one of the classes,
lending it is a TargetMismatch.

Not backported.  1.0.0 to 1.2.2 also read ``kw.value.n`` in a function
nested in ``emit_Call``, which cannot be reached: there the preparer fails
with a TargetMismatch and ``import warp`` fails as without gpushim.
``wp.overload`` with a stub body (``...`` or a docstring) names ``ast.Str``
too, up to 1.9.1: that is ``warp.py314_overload_stub``.

The probe.  A CPU kernel whose constants are an int, a float, ``True`` and
``False``, with loops over ``range`` of numbers and of a negated number,
generated anew (not read from Warp's kernel cache), compiled and launched once.
"""

from __future__ import annotations

import ast

from gpushim import Patch, TargetMismatch, expect

from ._legacy_ast import LEGACY_AST, NAMES, Num

patch = Patch(
    id="warp.py314_ast_names",
    affected="<1.7.0",
    fixed_in="1.7.0",
    issue="NVIDIA/warp GH-531, GH-561",
    fix="NVIDIA/warp@4d08e8714, NVIDIA/warp@d339dead1",
    summary="import warp raises AttributeError: module 'ast' has no attribute 'Str' on Python 3.14.",
    module="warp.codegen",
    before="warp.codegen",
    missing=("ast:Constant.n", "ast:Constant.s"),
)


class _Aliased:
    """A constant node as Python 3.8 to 3.13 gave it to Warp: ``n`` and ``s`` read its ``value``."""

    __slots__ = ("node",)

    def __init__(self, node: ast.Constant) -> None:
        self.node = node

    @property
    def n(self) -> object:
        return self.node.value

    s = n

    def __getattr__(self, name: str) -> object:
        return getattr(self.node, name)


def _with_aliases(wrapped, instance, args, kwargs):
    *leading, node = args
    return wrapped(*leading, _Aliased(node), **kwargs)


def _eval_num(wrapped, instance, args, kwargs):
    *leading, a = args
    if isinstance(a, Num):
        return True, a.value
    if isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub) and isinstance(a.operand, Num):
        return True, -a.operand.value
    return wrapped(*args, **kwargs)


@patch.preparer
def _prepare(codegen, journal):
    try:
        source = codegen.__spec__.loader.get_source(codegen.__name__) or ""
    except Exception as error:
        raise TargetMismatch(f"the source of {codegen.__name__} cannot be read: {error}") from None
    if "kw.value.n" in source:
        raise TargetMismatch(f"{codegen.__name__} reads kw.value.n in a function nested in emit_Call (not backported)")
    for name in NAMES:
        journal.lend(ast, name, getattr(LEGACY_AST, name))


@patch.applier
def _apply(codegen, journal):
    if expect(codegen, "ast", type(ast)) is not ast:
        raise TargetMismatch(f"{codegen.__name__}.ast is not the ast module")
    adjoint = expect(codegen, "Adjoint", type)
    for name, reads in (("emit_String", "s"), ("emit_Num", "n"), ("eval_num", "n")):
        if reads not in expect(adjoint, name, callable, own=True).__code__.co_names:
            raise TargetMismatch(f"Adjoint.{name} does not read .{reads}")
    journal.replace(codegen, "ast", LEGACY_AST)
    journal.wrap(adjoint, "emit_String", _with_aliases)
    journal.wrap(adjoint, "emit_Num", _with_aliases)
    journal.wrap(adjoint, "eval_num", _eval_num)


@patch.prober
def _probe():
    """Constants and unrolled ranges compile and give ``[7.5, 1.0, 0.0, 6.0, 9.0]``."""
    import warp

    warp.config.quiet = True

    def constants(out):
        out[0] = 2.5 + float(5)
        out[1] = float(True)
        out[2] = float(False)
        total = float(0)
        for i in range(4):
            total += float(i)
        out[3] = total
        total = float(0)
        for i in range(5, -1, -2):
            total += float(i)
        out[4] = total

    constants.__annotations__ = {"out": warp.array(dtype=float)}  # not a string: Warp 1.2 evaluates none
    constants = warp.kernel(constants)
    out = warp.zeros(5, dtype=float, device="cpu")
    cache, warp.config.cache_kernels = warp.config.cache_kernels, False  # a cached build skips code generation
    try:
        warp.launch(constants, dim=1, inputs=[out], device="cpu")
    except AttributeError as error:
        return f"building a kernel with constants raises AttributeError: {error}"
    finally:
        warp.config.cache_kernels = cache
    got = out.numpy().tolist()
    if got != [7.5, 1.0, 0.0, 6.0, 9.0]:
        return f"the constants kernel gives {got}, not [7.5, 1.0, 0.0, 6.0, 9.0]"
    return None
