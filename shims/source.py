"""A target's own Python function compiled again from its source, after a patch rewrote a few nodes of it.

Where a fix changes one expression inside a long function of the target,
rewriting that expression in the release's own source backports exactly the
fix and nothing else: every other statement stays the release's.  The new
function lives in the release's module namespace, under its file name and
line numbers, so that tracebacks point at the release's source.
"""

from __future__ import annotations

from .errors import TargetMismatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast
    from typing import Any, Callable


def recompiled(function: Any, rewrite: Callable[[ast.Module], object]) -> Any:
    """``function`` compiled again from its source once ``rewrite(tree)`` has changed the syntax tree in place.

    ``rewrite`` raises :class:`~gpushim.TargetMismatch` where the tree is not
    the one it was written for.  The new function keeps ``function``'s
    defaults (the same objects) and qualified name; a function with a closure
    or decorators, which recompiling would lose or apply again, or whose
    source cannot be read is a TargetMismatch.
    """
    import ast
    import inspect
    import textwrap

    name = f"{function.__module__}.{function.__qualname__}"
    try:
        lines, first_line = inspect.getsourcelines(function)
        filename = inspect.getsourcefile(function)
    except (OSError, TypeError):
        raise TargetMismatch(f"the source of {name} cannot be read") from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    if function.__code__.co_freevars or tree.body[0].decorator_list:  # pyright: ignore[reportAttributeAccessIssue]
        raise TargetMismatch(f"{name} has a closure or decorators, which recompiling would lose or apply again")
    ast.increment_lineno(tree, first_line - 1)
    rewrite(tree)
    scope: dict = {}
    exec(compile(tree, filename or f"<{function.__module__}>", "exec"), function.__globals__, scope)
    again = scope[function.__name__]
    again.__qualname__ = function.__qualname__
    again.__defaults__, again.__kwdefaults__ = function.__defaults__, function.__kwdefaults__
    return again
