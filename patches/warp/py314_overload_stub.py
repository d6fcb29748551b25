"""``wp.overload`` of a stub whose body is ``...`` or a docstring raises on Python 3.14 (Warp 1.x up to 1.9.1).

What breaks.  ``warp.context.overload``, given a function whose signature
overloads a generic kernel, parses its source and accepts a body of
``pass``, ``...`` and docstrings only; it tells ``...`` and a docstring by
``isinstance(node.value, (ast.Str, ast.Ellipsis))``.  Python 3.14 removed
both names, so every such stub raises ``AttributeError: module 'ast' has no
attribute 'Str'`` (a body of ``pass`` alone still works).  Checked on the
tags: the same line from 1.0.0 to 1.9.1; up to 1.6.2 ``import warp`` fails
first on 3.14 (``warp.py314_ast_names``).

Fixed upstream.  NVIDIA/warp@5fecf023c, first in 1.10.0 (``git tag
--contains``), which asks whether the expression is an ``ast.Constant``
holding a ``str`` or ``...``.  No upstream issue.

How the fix works.  ``warp.context``'s own global ``ast`` is bound to a
view of ``ast`` that holds the removed classes as 3.13 had them (shared
with ``warp.py314_ast_names``): ``isinstance`` asks the type of a
constant's value, so the release's own check runs as on 3.13 and a stub
is accepted or refused as there.  The ``ast`` module itself is not changed.
The gate is the one of ``warp.py314_ast_names``: ``ast.Constant.n`` and
``.s`` missing.

Not backported.  Nothing: 3.13 and 1.10.0 accept and refuse the same
bodies (a ``bytes`` expression is refused by both).

The probe.  A stub with a docstring and ``...`` overloading a generic
kernel, in a module of its own (``overload`` reads the stub's source).
"""

from __future__ import annotations

import ast
import types

from gpushim import Patch, TargetMismatch, expect

from ._legacy_ast import LEGACY_AST

patch = Patch(
    id="warp.py314_overload_stub",
    affected="<1.10.0",
    fixed_in="1.10.0",
    issue="no upstream issue (Python 3.14 removed ast.Str)",
    fix="NVIDIA/warp@5fecf023c",
    summary="wp.overload of a stub whose body is ... or a docstring raises AttributeError ('ast.Str') on Python 3.14.",
    module="warp.context",
    missing=("ast:Constant.n", "ast:Constant.s"),
)

_GENERIC = """
import typing
import warp


@warp.kernel
def generic(a: warp.array(dtype=typing.Any)):
    a[0] = a[0]


@warp.overload
def generic(a: warp.array(dtype=warp.float32)):
"""


def overload_stub(body: str) -> None:
    """Overload a generic kernel with a stub whose body is ``body`` (indented lines), in a module of its own."""
    import importlib.util
    import sys
    import tempfile
    from pathlib import Path

    name = "gpushim_overload_stub"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.py"
        path.write_text(_GENERIC + body + "\n")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        finally:
            del sys.modules[name]


@patch.applier
def _apply(context, journal):
    if expect(context, "ast", types.ModuleType) is not ast:
        raise TargetMismatch(f"{context.__name__}.ast is not the ast module")
    if not {"Str", "Ellipsis"} <= set(expect(context, "overload", callable).__code__.co_names):
        raise TargetMismatch(f"{context.__name__}.overload does not read ast.Str and ast.Ellipsis")
    journal.replace(context, "ast", LEGACY_AST)


@patch.prober
def _probe():
    """The stub is accepted: the overload is defined without an exception."""
    import warp

    warp.config.quiet = True
    try:
        overload_stub('    """A stub."""\n    ...')
    except AttributeError as error:
        return f"wp.overload of a stub with a docstring and ... raises AttributeError: {error}"
    return None
