"""What the import statements of one executing module alone get: modules provided, names lent.

A before-exec patch gives a module about to execute a module it imports
and cannot find (``distutils`` for DALI's ``gast_util`` on Python 3.12), or
a name that a shared module lacks (``numpy.float_`` for ``cupy`` under
NumPy 2).  Put in ``sys.modules`` or on ``numpy``, it would be seen by every
thread for as long as that module executes, and kept by some.  Instead
``__import__`` is diverted while anything is provided or lent: an import
statement of the executing module (and, for a package, of its submodules)
gets the provided module, or a view of the shared module that holds the
lent names and reads every other attribute through; every other import is
the interpreter's own, unchanged.  Once the module executed, its modules'
globals bound to a view are bound to the shared module itself again.

Compiled (Cython) modules import without ``__import__``: only the shared
object itself can carry a name to them (``Journal.lend(..., shared=True)``).
"""

from __future__ import annotations

import builtins
import sys

from .locks import ForkSafeRLock

_ModuleType = type(sys)


class _Diversion:
    """What the modules of one executing module get instead of what the interpreter would give them."""

    __slots__ = ("package", "modules", "views")

    def __init__(self, package: bool) -> None:
        self.package = package  # whether its submodules' imports are diverted too
        self.modules: dict[str, object] = {}  # provided, by name
        self.views: dict[int, _View] = {}  # by id of the shared module each stands for


class _View(_ModuleType):
    """A shared module as the executing module's imports see it: with the names lent to it."""

    def __init__(self, shared: _ModuleType) -> None:
        super().__init__(shared.__name__, shared.__doc__)
        for own in ("__package__", "__loader__", "__spec__"):
            del self.__dict__[own]  # read through to the shared module's
        self.__wrapped__ = shared

    def __getattr__(self, name: str):
        return getattr(self.__wrapped__, name)


_diversions: dict[str, _Diversion] = {}  # by the name of the executing module
_lock = ForkSafeRLock()
_interpreters = None  # the __import__ that diverting replaced
_installed = False  # whether builtins.__import__ reaches _import


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    diversion = _diversion_of(globals) if _diversions else None
    if diversion is not None and level == 0:
        top = name.partition(".")[0]
        if name in diversion.modules and (fromlist or top in diversion.modules):
            return diversion.modules[name if fromlist else top]
    imported = _interpreters(name, globals, locals, fromlist, level)
    if diversion is not None:
        view = diversion.views.get(id(imported))
        if view is not None and view.__wrapped__ is imported:
            return view
    return imported


def _diversion_of(globals: object) -> _Diversion | None:
    """The diversion for the module whose namespace ``globals`` is, if it belongs to an executing one."""
    importer = globals.get("__name__") if isinstance(globals, dict) else None
    if not isinstance(importer, str):
        return None
    for executing, diversion in list(_diversions.items()):
        if importer == executing or (diversion.package and importer.startswith(executing + ".")):
            return diversion
    return None


def _diverting(to: _ModuleType) -> _Diversion:
    """The diversion for ``to``, diverting ``__import__`` from now on; the lock is held."""
    global _interpreters, _installed
    diversion = _diversions.setdefault(to.__name__, _Diversion(hasattr(to, "__path__")))
    if not _installed:
        _interpreters, builtins.__import__, _installed = builtins.__import__, _import, True
    return diversion


def _forget(to: _ModuleType, diversion: _Diversion) -> None:
    """Drop an empty diversion, and stop diverting once there is none; the lock is held.

    Another ``__import__`` put in place since stays, and keeps calling this
    one, which then calls the interpreter's.  A thread already in this one
    still finds the interpreter's.
    """
    global _installed
    if diversion.modules or diversion.views or _diversions.get(to.__name__) is not diversion:
        return
    del _diversions[to.__name__]
    if not _diversions and builtins.__import__ is _import:
        builtins.__import__, _installed = _interpreters, False


def provide(to: _ModuleType, name: str, module: object) -> None:
    """Have the import statements of ``to`` get ``module`` for ``name`` until :func:`withdraw`."""
    with _lock:
        _diverting(to).modules[name] = module


def withdraw(to: _ModuleType, name: str, module: object) -> None:
    """Stop providing ``module`` as ``name`` to ``to``."""
    with _lock:
        diversion = _diversions.get(to.__name__)
        if diversion is not None and diversion.modules.get(name) is module:
            del diversion.modules[name]
            _forget(to, diversion)


def lend(to: _ModuleType, shared: _ModuleType, name: str, value: object) -> None:
    """Have the import statements of ``to`` get ``shared`` holding ``name`` as ``value`` until :func:`take_back`."""
    with _lock:
        views = _diverting(to).views
        view = views.get(id(shared))
        if view is None or view.__wrapped__ is not shared:
            view = views[id(shared)] = _View(shared)
        setattr(view, name, value)


def take_back(to: _ModuleType, shared: _ModuleType, name: str, value: object) -> None:
    """Stop lending ``name`` of ``shared`` to ``to``; once nothing of it is lent, its modules hold ``shared`` again."""
    with _lock:
        diversion = _diversions.get(to.__name__)
        view = diversion.views.get(id(shared)) if diversion is not None else None
        if view is None or view.__dict__.get(name) is not value:
            return
        del view.__dict__[name]
        if set(view.__dict__) - {"__name__", "__doc__", "__wrapped__"}:
            return
        del diversion.views[id(shared)]
        _forget(to, diversion)
    _rebind(to.__name__, view, shared)


def _rebind(package: str, view: _View, shared: _ModuleType) -> None:
    """Bind the globals of ``package``'s modules that hold ``view`` to ``shared``; a module that resists is left."""
    namespace = _ModuleType.__dict__["__dict__"].__get__
    for name, module in list(sys.modules.items()):
        if not (isinstance(name, str) and (name == package or name.startswith(package + "."))):
            continue
        try:
            globals = namespace(module)
            for key, value in list(globals.items()):
                if value is view:
                    globals[key] = shared
        except Exception:
            continue
