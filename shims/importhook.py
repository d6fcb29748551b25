"""Call back before a module executes and when it finishes importing, without importing it.

gpushim must never import a target itself, and must not pay for an import
hook framework on the path of ``import gpushim.auto``.  This is the whole of
what it needs: a ``sys.meta_path`` finder that, for watched names only,
lets the other finders find the module and then runs callbacks right before
and right after the module's own code executes.
"""

from __future__ import annotations

import sys

from .errors import INTERRUPTIONS
from .locks import ForkSafeRLock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Callable, Optional

    Callback = Callable[[str, ModuleType], None]
    Preparation = Callable[[str, ModuleType], Optional[Callable[[], None]]]


def is_imported(name: str) -> bool:
    """Whether ``name`` is in ``sys.modules`` and done executing (a lazy module not loaded yet is not)."""
    module = sys.modules.get(name)
    if module is None or _is_unloaded_lazy(module):
        return False
    try:
        if getattr(module.__spec__, "_initializing", False):
            return False
    except Exception:
        pass  # no spec to say otherwise: a module put there by hand
    return not _executing(module)


def _executing(module: object) -> bool:
    """Whether a thread is running the code of ``module``, which can be in ``sys.modules`` unmarked: loaded by hand,
    as importlib's documentation shows (``spec_from_file_location``, ``module_from_spec``, ``exec_module``)."""
    namespace = type(sys).__dict__["__dict__"].__get__(module) if isinstance(module, type(sys)) else None
    for frame in sys._current_frames().values():
        while frame is not None:
            if frame.f_globals is namespace and frame.f_code.co_name == "<module>":
                return True
            frame = frame.f_back
    return False


def _is_unloaded_lazy(module: object) -> bool:
    """Whether ``importlib.util.LazyLoader`` has yet to load ``module``: reading any attribute would load it."""
    try:
        return issubclass(type(module), sys.modules["importlib.util"]._LazyModule)
    except Exception:
        return False  # no importlib.util, no lazy module


def wait_for_import(name: str) -> None:
    """Return once no other thread is executing the module ``name``.

    Taking and releasing the module's import lock waits for another thread's
    import to finish; the lock is reentrant, so on the thread that is
    importing ``name`` (gpushim patched from inside the target's own import)
    this returns at once, as it does on a deadlock between two imports.
    """
    try:
        from importlib import _bootstrap

        _bootstrap._lock_unlock_module(name)  # pyright: ignore[reportAttributeAccessIssue]  (private; guarded)
    except Exception:
        pass


def _finding_further_up(name: str) -> bool:
    """Whether a call of the caller's function, further up this thread's stack, is finding ``name``.

    The other finders asked to find a watched module may ask the import
    system again (``importlib.util.find_spec``): the finder then stays out.
    Read from the stack, so that nothing is left to undo when a Ctrl-C ends
    the finding half way.
    """
    finding = sys._getframe(1)
    namespace, code = finding.f_globals, finding.f_code
    frame = finding.f_back
    while frame is not None:
        # f_globals first: reading f_code raises an audit event, which each audit hook pays for.
        if frame.f_globals is namespace and frame.f_code is code and frame.f_locals.get("fullname") == name:
            return True
        frame = frame.f_back
    return False


def _in_importlib_frames(method):
    """``method``, whose frames the interpreter takes for importlib's own.

    A module's import error reaches the user without importlib's frames: the
    interpreter removes each run of them that ends in the one named
    ``_call_with_frames_removed``, known by their file name.  A stand-in for a
    loader runs in the middle of such a run, and goes with it so named.
    """
    method.__code__ = method.__code__.replace(co_filename="<frozen importlib._bootstrap>")
    return method


class _NotifyingLoader:
    """Stands in for a module's loader until that module has executed."""

    def __init__(self, loader, on_executed: Callable[[str], None], on_executing=None) -> None:
        self._loader = loader
        self._on_executed = on_executed
        self._on_executing = on_executing

    def __getattr__(self, name: str):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return None if self._loader is None else self._loader.create_module(spec)

    @_in_importlib_frames
    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        execute = _as_namespace_package if self._loader is None else self._loader.exec_module
        if self._on_executing is None:
            execute(module)
        else:
            cleanups = self._on_executing(module)
            try:
                execute(module)
            finally:
                for cleanup in cleanups:
                    cleanup()
        self._on_executed(module.__name__)


def _as_namespace_package(module: ModuleType) -> None:
    """Set ``module`` up as the import system sets up a namespace package found without a loader (up to Python
    3.12): its loader and ``__file__``.  A namespace package has no code to execute."""
    from importlib import _bootstrap

    initialise = _bootstrap._init_module_attrs  # pyright: ignore[reportAttributeAccessIssue]  (private; the import system's own)
    initialise(module.__spec__, module, override=True)  # pyright: ignore[reportArgumentType]  (a namespace package's spec)


class _NotifyingLegacyLoader:
    """Stands in for a loader that has ``load_module`` alone (``zipimporter`` before Python 3.10) until it loaded.

    Such a loader executes the module it makes, so nothing can act before.
    """

    def __init__(self, spec, on_executed: Callable[[str], None]) -> None:
        self._spec = spec
        self._loader = spec.loader
        self._on_executed = on_executed

    def __getattr__(self, name: str):
        return getattr(self._loader, name)

    @_in_importlib_frames
    def load_module(self, fullname: str) -> ModuleType:
        self._spec.loader = self._loader
        module = self._loader.load_module(fullname)
        self._on_executed(fullname)
        return module


class ImportHooks:
    """A meta path finder that calls back right before a watched module executes and whenever it finishes importing.

    A callback stays until it is forgotten, so that a module imported again
    (removed from ``sys.modules`` first) is called back for again; the
    finder leaves ``sys.meta_path`` once it watches nothing.
    """

    def __init__(self) -> None:
        self._callbacks: dict[str, list[Callback]] = {}
        self._preparations: dict[str, list[Preparation]] = {}
        self._executions: dict[str, int] = {}
        self._called_back: dict[str, object] = {}  # what each watched name held when last called back for
        self._executing: set[str] = set()
        self._audited = False
        self._lock = ForkSafeRLock()

    def when_imported(self, name: str, callback: Callback) -> None:
        """Run ``callback(name, module)`` whenever ``name`` finishes importing, and now if it has.

        ``module`` is what ``sys.modules[name]`` then holds, which need not be a module.
        """
        self.watch(name, callback)
        self.call_back_if_imported(name, callback)

    def watch(self, name: str, callback: Callback) -> None:
        """Run ``callback(name, module)`` whenever an import of ``name`` begun from now on ends; once per callback."""
        with self._lock:
            if name not in self._callbacks and is_imported(name):
                self._called_back[name] = sys.modules[name]  # the watcher calls back for it (call_back_if_imported)
            callbacks = self._callbacks.setdefault(name, [])
            if callback not in callbacks:
                callbacks.append(callback)
            self._enter()

    def before_executing(self, name: str, preparation: Preparation) -> None:
        """Run ``preparation(name, module)`` whenever ``name`` is about to execute, from the next import on.

        ``module`` is the new module, not yet executed.  What ``preparation``
        returns, if not None, is called right after the module executed,
        whether or not its code raised.
        """
        with self._lock:
            preparations = self._preparations.setdefault(name, [])
            if preparation not in preparations:
                preparations.append(preparation)
            self._enter()

    def _enter(self) -> None:
        """Stand first on ``sys.meta_path``, and again before each import, if a finder was put ahead of this one."""
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)
        if not self._audited:
            self._audited = True
            _keep_first_before_imports(self)

    def call_back_if_imported(self, name: str, callback: Callback) -> None:
        """Run ``callback(name, module)`` now if ``name`` has finished importing, after any other thread's import of it.

        Call it after :meth:`watch`.  An import that another thread began before
        was found without this finder, so no loader of its will call back: this
        waits for it to end and then calls back.  An import begun since calls back
        through its loader too, so a callback must bear two calls for one module.
        One that this very thread is executing (its import led here) calls back at
        the first import of anything after it has finished.
        """
        wait_for_import(name)
        with self._lock:
            module = sys.modules.get(name)
            if module is None:
                return
            if not is_imported(name):
                if _is_unloaded_lazy(module):
                    self._notify_when_loaded(module)
                else:
                    self._executing.add(name)
                return
            self._called_back[name] = module
        callback(name, module)

    def call_back_for_missed(self) -> None:
        """Call back for the watched modules imported since without this finder's loader.

        Another finder ahead of this one can load a module itself
        (``typeguard.install_import_hook`` does).  Never called from
        :meth:`find_spec`: the interpreter calls finders holding its global
        import lock, and a callback waits for the registry's lock, which a
        thread holds while it imports a patch module.
        """
        missed = [name for name in list(self._callbacks) if sys.modules.get(name) is not self._called_back.get(name)]
        for name in missed:
            if is_imported(name):
                self._executed(name)

    def _notify_when_loaded(self, module: ModuleType) -> None:
        """Call back once the lazy ``module`` is loaded, by the loader its first attribute read will run.

        gpushim must not load it: its spec is read from the namespace, which loads nothing.
        """
        spec = type(sys).__dict__["__dict__"].__get__(module).get("__spec__")
        loader = getattr(spec, "loader", None)
        if hasattr(loader, "exec_module") and not isinstance(loader, _NotifyingLoader):
            spec.loader = _NotifyingLoader(loader, self._loaded)

    def forget(self, name: str, callback: Callback) -> None:
        """Drop ``callback``, and this finder from ``sys.meta_path`` once it watches nothing."""
        with self._lock:
            callbacks = self._callbacks.get(name, [])
            if callback in callbacks:
                callbacks.remove(callback)
            if not callbacks:
                self._callbacks.pop(name, None)
                self._called_back.pop(name, None)
                self._executing.discard(name)
            self._leave_if_idle()

    def forget_preparation(self, name: str, preparation: Preparation) -> None:
        """Drop ``preparation``, and this finder from ``sys.meta_path`` once it watches nothing."""
        with self._lock:
            preparations = self._preparations.get(name, [])
            if preparation in preparations:
                preparations.remove(preparation)
            if not preparations:
                self._preparations.pop(name, None)
            self._leave_if_idle()

    def _leave_if_idle(self) -> None:
        if not self._callbacks and not self._preparations and self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(self, fullname: str, path=None, target=None):
        if sys.meta_path and sys.meta_path[0] is not self:
            self._go_first(finding=1)
        if self._executing:
            self._call_back_for_finished()
        watched = fullname in self._callbacks or fullname in self._preparations
        if not watched or _finding_further_up(fullname):
            return None
        spec = self._find_with_others(fullname, path, target)
        if spec is None:
            return None
        if hasattr(spec.loader, "exec_module") or (spec.loader is None and spec.submodule_search_locations is not None):
            spec.loader = _NotifyingLoader(spec.loader, self._loaded, self._prepare)
        elif hasattr(spec.loader, "load_module"):
            spec.loader = _NotifyingLegacyLoader(spec, self._loaded)
        return spec

    def _go_first(self, finding: int = 0) -> None:
        """Stand first on ``sys.meta_path`` again, ahead of a finder put before this one since.

        Such a finder (``typeguard.install_import_hook``'s) would find a
        target without this one, which could patch it only when gpushim is
        next asked.  First, this finder asks it in its turn and wraps the
        loader it returns, so the target is patched before its import
        returns.  The finders keep their order.  This finder moves only
        while no iteration of ``sys.meta_path`` but the ``finding`` ones of
        this thread, which have passed it, is under way: another would see a
        finder twice and skip this one (a hook that imports while it finds).
        """
        if _findings() > finding:
            return
        try:
            sys.meta_path.remove(self)
        except ValueError:
            return
        sys.meta_path.insert(0, self)

    def _prepare(self, module: ModuleType) -> list[Callable[[], None]]:
        """Run the preparations for ``module``, about to execute; the cleanups they return.

        An exception (strict mode) is raised after the cleanups of those that ran.
        """
        with self._lock:
            preparations = list(self._preparations.get(module.__name__, ()))
        cleanups = []
        try:
            for preparation in preparations:
                cleanup = preparation(module.__name__, module)
                if cleanup is not None:
                    cleanups.append(cleanup)
        except BaseException:
            for cleanup in cleanups:
                cleanup()
            raise
        return cleanups

    def _find_with_others(self, fullname: str, path, target):
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if finder is self or find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def executions(self, name: str) -> int:
        """How many times a loader executed module ``name`` under this finder: a reload counts again."""
        return self._executions.get(name, 0)

    def _call_back_for_finished(self) -> None:
        """Call back for the watched modules that were executing when first watched and have finished since."""
        with self._lock:
            finished = [name for name in self._executing if is_imported(name)]
            self._executing.difference_update(finished)
        for name in finished:
            self._executed(name)

    def _loaded(self, name: str) -> None:
        with self._lock:
            self._executions[name] = self._executions.get(name, 0) + 1
        self._executed(name)

    def _executed(self, name: str) -> None:
        """Run every callback for ``name``; an exception (strict mode) is raised after the last one ran."""
        module = sys.modules.get(name)
        if module is None:
            return  # its import failed after all
        with self._lock:
            self._called_back[name] = module
            callbacks = list(self._callbacks.get(name, ()))
        first_error = None
        for callback in callbacks:
            try:
                callback(name, module)
            except INTERRUPTIONS:
                raise
            except BaseException as error:
                first_error = first_error or error
        if first_error is not None:
            raise first_error


def _keep_first_before_imports(finder: ImportHooks) -> None:
    """Put ``finder`` first again right before each import statement finds a module, if a finder went ahead of it.

    A hook installed and its module imported straight after
    (``typeguard.install_import_hook`` then ``import cupy``) would
    otherwise find that module without ``finder``.  The interpreter raises
    the ``import`` audit event before it asks the finders, for an import
    statement or ``__import__`` (``importlib.import_module`` raises none for
    the module it is given).  ``finder`` moves only while no thread is
    finding a module: an iteration of ``sys.meta_path`` under way would
    see a finder twice and skip another (:meth:`ImportHooks._go_first`).  An
    audit hook cannot be removed: once ``finder`` has left ``sys.meta_path``
    (``unpatch()``) it does nothing.
    """
    meta_path_of = sys.__dict__.get  # the audit hook must not raise, whatever sys.meta_path is

    def before_finding(event: str, arguments: tuple) -> None:
        if event != "import":
            return
        meta_path = meta_path_of("meta_path")
        try:
            if isinstance(meta_path, list) and meta_path and meta_path[0] is not finder and finder in meta_path:
                finder._go_first()
        except Exception:
            pass  # the import goes on as without gpushim

    try:
        sys.addaudithook(before_finding)
    except Exception:
        pass  # refused by an audit hook of the program's: a target is then patched when gpushim is next asked


def _findings() -> int:
    """How many iterations over ``sys.meta_path`` to find a module are under way, in all threads."""
    bootstrap = sys.modules["_frozen_importlib"]
    namespace, code = vars(bootstrap), bootstrap._find_spec.__code__
    count = 0
    for frame in sys._current_frames().values():
        while frame is not None:
            count += frame.f_globals is namespace and frame.f_code is code  # f_globals first: see _finding_further_up
            frame = frame.f_back
    return count


def _without_earlier_hooks(finders: list) -> list:
    """``finders`` less the hooks of an earlier execution of this module.

    Once gpushim's modules are purged from ``sys.modules`` and imported
    again, the earlier hooks call back into a registry nobody can reach,
    whose patch modules now load against the new classes: they would only
    fail, loudly.
    """
    return [
        finder
        for finder in finders
        if not (type(finder).__module__ == __name__ and type(finder).__qualname__ == ImportHooks.__qualname__)
    ]


# importlib.reload() runs this again in the same namespace (as %autoreload does): the finder stays.
if "hooks" not in globals():
    sys.meta_path[:] = _without_earlier_hooks(sys.meta_path)
    hooks = ImportHooks()
