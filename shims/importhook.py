"""Call back when a module finishes importing, without importing it.

gpushim must never import a target itself, and must not pay for an import
hook framework on the path of ``import gpushim.auto``.  This is the whole of
what it needs: a ``sys.meta_path`` finder that, for watched names only,
lets the other finders find the module and then runs callbacks right after
the module's own code has executed.
"""

from __future__ import annotations

import sys
from _thread import RLock, _local

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Callable

    Callback = Callable[[ModuleType], None]


def is_imported(name: str) -> bool:
    """Whether ``name`` is in ``sys.modules`` and done executing."""
    module = sys.modules.get(name)
    if module is None:
        return False
    spec = getattr(module, "__spec__", None)
    return not getattr(spec, "_initializing", False)


class _NotifyingLoader:
    """Stands in for a module's loader until that module has executed."""

    def __init__(self, loader, on_executed: Callable[[str], None]) -> None:
        self._loader = loader
        self._on_executed = on_executed

    def __getattr__(self, name: str):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        self._on_executed(module.__name__)


class PostImportHooks:
    """A meta path finder holding callbacks for modules not imported yet."""

    def __init__(self) -> None:
        self._callbacks: dict[str, list[Callback]] = {}
        self._executing: set[str] = set()
        self._lock = RLock()
        self._finding = _local()

    def when_imported(self, name: str, callback: Callback) -> None:
        """Run ``callback(module)`` once ``name`` has been imported, or now if it has.

        A module that is executing already (imported by another thread, say) was found
        before this finder knew of it, so no loader of its will call back; the callbacks
        then run at the first import of anything after it has finished.
        """
        with self._lock:
            if not is_imported(name):
                self._callbacks.setdefault(name, []).append(callback)
                if name in sys.modules:
                    self._executing.add(name)
                if self not in sys.meta_path:
                    sys.meta_path.insert(0, self)
                return
        callback(sys.modules[name])

    def forget(self, name: str, callback: Callback) -> None:
        with self._lock:
            callbacks = self._callbacks.get(name, [])
            if callback in callbacks:
                callbacks.remove(callback)

    def find_spec(self, fullname: str, path=None, target=None):
        if self._executing:
            self._catch_up()
        if fullname not in self._callbacks or fullname in self._names_being_found():
            return None
        self._names_being_found().add(fullname)
        try:
            spec = self._find_with_others(fullname, path, target)
        finally:
            self._names_being_found().discard(fullname)
        if spec is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _NotifyingLoader(spec.loader, self._executed)
        return spec

    def _names_being_found(self) -> set[str]:
        names = getattr(self._finding, "names", None)
        if names is None:
            names = self._finding.names = set()
        return names

    def _find_with_others(self, fullname: str, path, target):
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if finder is self or find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def _catch_up(self) -> None:
        with self._lock:
            finished = [name for name in self._executing if is_imported(name)]
            self._executing.difference_update(finished)
        for name in finished:
            self._executed(name)

    def _executed(self, name: str) -> None:
        with self._lock:
            callbacks = self._callbacks.pop(name, [])
            if not self._callbacks and self in sys.meta_path:
                sys.meta_path.remove(self)
        module = sys.modules[name]
        for callback in callbacks:
            callback(module)


hooks = PostImportHooks()
