"""Modules provided to the import statements of one module alone, while it executes.

A before-exec patch gives a module about to execute a module it imports
and cannot find (``distutils`` for DALI's ``gast_util`` on Python 3.12).
Put in ``sys.modules``, it would be found by every thread's imports for as
long as that module executes, and kept by them.  Instead ``__import__`` is
diverted while anything is provided: an import statement whose globals are
that module's namespace (its own code, at module level or in a function it
defines) gets the provided module, and every other import is the
interpreter's own, unchanged.
"""

from __future__ import annotations

import builtins

from .locks import ForkSafeRLock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

_provided: dict[int, tuple[dict, dict[str, object]]] = {}  # by id of a namespace: it, and what it is provided
_lock = ForkSafeRLock()
_interpreters = None  # the __import__ that diverting replaced, while diverting


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    found = _provided.get(id(globals))
    if found is not None and found[0] is globals and level == 0:
        provided = found[1]
        top = name.partition(".")[0]
        if name in provided and (fromlist or top in provided):
            return provided[name] if fromlist else provided[top]
    return _interpreters(name, globals, locals, fromlist, level)


def provide(to: ModuleType, name: str, module: object) -> None:
    """Have the import statements of ``to`` get ``module`` for ``name`` until :func:`withdraw`."""
    global _interpreters
    namespace = vars(to)
    with _lock:
        _provided.setdefault(id(namespace), (namespace, {}))[1][name] = module
        if _interpreters is None:
            _interpreters, builtins.__import__ = builtins.__import__, _import


def withdraw(to: ModuleType, name: str, module: object) -> None:
    """Stop providing ``module`` as ``name`` to ``to``; stop diverting once nothing is provided.

    Another ``__import__`` put in place since stays, and keeps calling this
    one, which then calls the interpreter's.
    """
    global _interpreters
    namespace = vars(to)
    with _lock:
        found = _provided.get(id(namespace))
        if found is None or found[1].get(name) is not module:
            return
        del found[1][name]
        if not found[1]:
            del _provided[id(namespace)]
        if not _provided and builtins.__import__ is _import:
            builtins.__import__, _interpreters = _interpreters, None
