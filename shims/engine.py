"""Apply, undo and report patches.

A :class:`Registry` holds the libraries of a catalogue and what became of
each patch.  Applying means waiting for a library's target to finish
importing (or acting at once if it has), then loading that library's patch
modules, gating each on the installed release (:mod:`gpushim.gate`) and
running its ``apply``.
Everything that can go wrong in there is caught (any ``BaseException``
too, but for the interruptions a program's own signal handlers raise:
``KeyboardInterrupt``, ``GeneratorExit`` and a ``SystemExit`` that no patch
module raised reach it as they would without gpushim): the user's ``import cupy`` must succeed even when a
patch cannot be loaded or applied, unless ``GPUSHIM_STRICT=1`` asks
otherwise, and then only after every patch of the target has reached its
final state.
"""

from __future__ import annotations

import sys

from . import report, switches
from .catalogue import Library, discover
from .errors import INTERRUPTIONS, NotAffected, PatchError, TargetMismatch
from .importhook import hooks, is_imported, wait_for_import
from .locks import ForkSafeRLock
from .states import APPLIED, DISABLED, FAILED, INACTIVE, NOT_AFFECTED, OPT_IN, PENDING, Record

TYPE_CHECKING = False  # typing costs ~2 ms to import; `import gpushim.auto` has a 5 ms budget
if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import ModuleType
    from typing import Callable

    from .declaration import Patch
    from .journal import Journal
    from .releases import Listings

    Release = tuple[str, str]


_WAITING = (PENDING, APPLIED, INACTIVE)  # the states of patches that the next import of their module applies


class _Outcome:
    """What happened to one patch in this process."""

    __slots__ = ("state", "reason", "journal", "release", "module", "execution", "waits_for")

    def __init__(self, state: str, waits_for: str, reason: str = "") -> None:
        self.state = state
        self.reason = reason
        self.journal: Journal | None = None
        self.release: Release | None = None
        self.module: ModuleType | None = None
        self.execution = 0  # the module's execution it was applied to (hooks.executions): a reload is another
        self.waits_for = waits_for  # the module whose import applies the patch


class Registry:
    """The patches of a catalogue and what became of each of them in this process.

    ``problems`` are the failed records of what other distributions declared
    but cannot be used (see :mod:`gpushim.plugins`): :meth:`status` lists them,
    and the first :meth:`patch` of every patch warns of them (raises, under
    ``GPUSHIM_STRICT=1``, once the patches it can apply are in place).
    """

    def __init__(self, libraries: Iterable[Library], problems: Iterable[Record] = ()) -> None:
        self._libraries = {id: library for library in libraries for id in library.ids}
        self._problems = list(problems)
        self._problems_reported = False
        self._declarations: dict[str, Patch] = {}
        self._outcomes: dict[str, _Outcome] = {}
        self._watched: set[str] = set()
        self._prepared: dict[str, Journal] = {}  # what each before-exec patch's preparer did
        self._modules_with_preparers: set[str] = set()  # the modules whose execution before-exec patches wait for
        self._imported_before_patch: set[str] = set()  # targets whose names may hold unpatched originals
        self._strict = False
        self._enabled: set[str] = set()  # the opt-in patches GPUSHIM_ENABLE named at the last patch()
        self._lock = ForkSafeRLock()

    @classmethod
    def discover(cls, package: str) -> Registry:
        """The registry of every patch under the package ``package`` (see :mod:`gpushim.catalogue`)."""
        return cls(discover(package))

    @property
    def ids(self) -> list[str]:
        return list(self._libraries)

    @property
    def active(self) -> list[str]:
        """The patches that :meth:`patch` was asked for and :meth:`unpatch` has not undone since, in any state."""
        with self._lock:
            return list(self._outcomes)

    def library(self, id: str) -> Library:
        return self._libraries[id]

    def __getitem__(self, id: str) -> Patch:
        """The declaration of ``id``, loading its module if need be; raises if it cannot.

        Loaded without the lock, once another thread's import of the target
        has ended: a patch module that imports its target would otherwise
        wait for that import while holding the lock the import needs to
        apply its patches.  Two threads that load one module get one declaration.
        """
        declaration = self._declarations.get(id)
        if declaration is None:
            library = self._libraries[id]
            wait_for_import(library.target)
            declaration = self._declarations.setdefault(id, library.load(id))
        return declaration

    @property
    def patches(self) -> list[Patch]:
        """Every declaration; raises for a patch module that cannot be loaded."""
        return [self[id] for id in self._libraries]

    def _select(self, ids: tuple[str, ...]) -> list[str]:
        unknown = [id for id in ids if id not in self._libraries]
        if unknown:
            raise ValueError(f"unknown gpushim patch ids {unknown}; known: {self.ids}")
        return list(ids or self._libraries)

    def patch(self, *ids: str) -> None:
        """Apply the given patches (all by default) now or when their targets are imported."""
        hooks.call_back_for_missed()
        switches.check_names()
        switches.configure_logging()
        self._strict = switches.strict()
        off = switches.disabled(self.ids)
        self._enabled = switches.enabled(self.ids)
        names = []
        with self._lock:
            for id in self._select(ids):
                outcome = self._outcomes.get(id)
                if outcome is not None and outcome.state == APPLIED:
                    continue
                if outcome is None or outcome.state != PENDING:  # a pending one may have missed an import
                    target = self._libraries[id].target
                    if id in off:
                        self._outcomes[id] = _Outcome(DISABLED, target, f"{switches.DISABLE} turns it off")
                        continue
                    outcome = self._outcomes[id] = _Outcome(PENDING, target)
                if outcome.waits_for not in names:
                    names.append(outcome.waits_for)
            self._imported_before_patch.update(name for name in names if name in sys.modules)
            self._watch(names)
        self._apply_to_imported(names)
        if not ids:
            self._report_problems()

    def _report_problems(self) -> None:
        """Warn once of what other distributions declared but cannot be used; raise for it if strict."""
        messages = [
            f"gpushim cannot use {problem['id']} ({problem['reason']}); its patches are not applied"
            for problem in self._problems
        ]
        with self._lock:
            first, self._problems_reported = not self._problems_reported, True
        if first:
            for message in messages:
                report.warn(message)
        if messages and self._strict:
            raise PatchError("; ".join(messages))

    def _watch(self, names: list[str]) -> None:
        """Have the import hook call back for each of ``names`` whenever it is imported; the lock is held."""
        for name in names:
            if name not in self._watched:
                hooks.watch(name, self._on_import)
                hooks.before_executing(name, self._arm_preparers)
        self._watched.update(names)

    def _apply_to_imported(self, names: list[str]) -> None:
        """Apply what waits for those of ``names`` that are imported, once other threads' imports of them end.

        Called without the lock: another thread's import needs it to apply its patches.
        """
        for name in names:
            hooks.call_back_if_imported(name, self._on_import)

    def unpatch(self, *ids: str) -> None:
        """Undo the given patches (all by default), restoring the identical originals.

        What cannot be undone stops nothing else: its patch is ``failed``,
        naming what stays patched, and is warned of once the rest is undone
        (raised, under ``GPUSHIM_STRICT=1``).
        """
        failures = []
        with self._lock:
            for id in self._select(ids):
                outcome = self._outcomes.pop(id, None)
                applied = outcome.journal if outcome is not None else None
                journals = [journal for journal in (applied, self._prepared.pop(id, None)) if journal is not None]
                stuck = _each(journal.undo for journal in journals)
                if stuck:
                    failed = self._outcomes[id] = _Outcome(FAILED, self._libraries[id].target, stuck)
                    failed.release = outcome.release if outcome is not None else None
                    failures.append(f"gpushim could not undo {id} ({stuck}): that stays patched")
                    report.log("error", failures[-1])
                elif applied is not None:
                    report.log("info", f"{id} undone")
            for name in list(self._watched):
                if not self._waiting_for(name):
                    self._watched.discard(name)
                    hooks.forget(name, self._on_import)
                    hooks.forget_preparation(name, self._arm_preparers)
            needed = {self._declarations[id].before for id in self._outcomes if id in self._declarations}
            for name in self._modules_with_preparers - needed:
                self._modules_with_preparers.discard(name)
                hooks.forget_preparation(name, self._run_preparers)
        for message in failures:
            report.warn(message)
        if failures and switches.strict():
            raise PatchError("; ".join(failures))

    def _waiting_for(self, name: str) -> list[str]:
        """The patches, pending, applied or inactive, that the import of module ``name`` applies.

        An outcome is inactive only where a before-exec patch's module
        executed before :meth:`patch` (:meth:`_settle_unprepared`): its next
        execution (a reload) is prepared.
        """
        return [id for id, outcome in self._outcomes.items() if outcome.state in _WAITING and outcome.waits_for == name]

    def _arm_preparers(self, name: str, module: ModuleType):
        """Have the modules that pending patches act before call back, now that target ``name`` begins executing.

        Declarations are loaded here, not earlier, so that ``gpushim.patch()``
        stays cheap; the target's own execution imports the modules that
        they name.  A declaration that cannot be loaded fails after the import.
        """
        with self._lock:
            befores = self._arm_preparers_of(name)
        if name in befores:
            return self._run_preparers(name, module)
        return None

    def _arm_preparers_of(self, name: str) -> list[str]:
        """Have the modules that the patches waiting for ``name`` act before call back; their names. Lock held."""
        befores = []
        for id in self._waiting_for(name):
            try:
                patch = self[id]
            except BaseException as error:
                _raise_interruption(error, id)
                continue
            if patch.before is not None and patch.before not in befores:
                befores.append(patch.before)
        for before in befores:
            if before not in self._modules_with_preparers:
                self._modules_with_preparers.add(before)
                hooks.before_executing(before, self._run_preparers)
        return befores

    def _run_preparers(self, name: str, module: ModuleType):
        """Run the preparers of the patches that act before module ``name``; what withdraws what they provided.

        Each is gated on the release that owns the file the import system
        found for ``name``, and on the environment.  A preparer that fails
        leaves the import as without gpushim; strict mode raises.
        """
        from .journal import Journal
        from .releases import Listings

        failures, journals, listings = [], [], Listings()
        with self._lock:
            for id, outcome in list(self._outcomes.items()):
                patch = self._declarations.get(id)
                if patch is None or patch.before != name or outcome.state not in _WAITING:
                    continue
                earlier = self._prepared.pop(id, None)
                if earlier is not None:
                    earlier.undo()
                try:
                    state, reason, outcome.release = self._gate(id, module, listings, self._enabled, name)
                    if state is not None:
                        outcome.state, outcome.reason = state, reason
                        continue
                    journal = Journal(module, outcome.release)
                    journals.append(journal)
                    # catalogue.validate refuses a patch that acts before a module and declares no preparer
                    if not _run(patch.prepare, module, journal, outcome):  # pyright: ignore[reportArgumentType]
                        continue
                    self._prepared[id] = journal
                    outcome.state, outcome.reason = APPLIED, _with_withdrawn(reason, patch, journal)
                    # the gate reads a release wherever it leaves the state to the patch
                    report.log("info", f"{id} prepared {name} of {' '.join(outcome.release)}")  # pyright: ignore[reportCallIssue, reportArgumentType]
                except BaseException as error:
                    _raise_interruption(error, id)
                    failures.append(self._fail(id, outcome, error))

        def withdraw() -> None:
            stuck = _each(journal.withdraw for journal in journals)
            if stuck:
                report.warn(f"gpushim could not withdraw what it provided or lent while {name} executed ({stuck})")

        for message in failures:
            report.warn(message)
        if failures and self._strict:
            withdraw()
            raise PatchError("; ".join(failures))
        return withdraw if journals else None

    def _on_import(self, name: str, module: ModuleType) -> None:
        """Apply the patches that wait for module ``name``, imported as ``module``; then report, then raise if strict.

        Called whenever the module finishes importing: one imported again
        (after ``del sys.modules[...]``) or executed again in place
        (``importlib.reload``) gets the patches anew, their earlier
        replacements undone first so that nothing is wrapped twice.  A patch
        of another module of the library (``Patch.module``) waits for that one.
        """
        from .releases import Listings

        failures, modules, listings = [], [], Listings()
        with self._lock:
            patched_late = name in self._imported_before_patch
            self._imported_before_patch.discard(name)
            self._arm_preparers_of(name)  # for a module of the target not executed yet, when patch() came late
            for id in self._waiting_for(name):
                outcome = self._outcomes[id]
                if outcome.module is module and outcome.execution == hooks.executions(name):
                    continue  # the same execution, called back for twice
                if outcome.journal is not None:
                    outcome.journal.undo()
                    outcome = self._outcomes[id] = _Outcome(PENDING, outcome.waits_for)
                try:
                    if not isinstance(module, type(sys)):
                        raise TargetMismatch(f"sys.modules[{name!r}] is a {type(module).__name__}, not a module")
                    before = self[id].before
                    if before is not None and self[id].apply is None:
                        self._settle_unprepared(id, before, outcome, listings)
                        continue
                    own = module_of(self[id])
                    if own is not None and own != name:
                        outcome.waits_for = own
                        modules.append(own)
                        continue
                    self._apply(id, module, outcome, listings)
                    outcome.execution = hooks.executions(name)
                except BaseException as error:
                    _raise_interruption(error, id)
                    failures.append(self._fail(id, outcome, error))
            journals = [
                outcome.journal
                for outcome in self._outcomes.values()
                if outcome.module is module and outcome.journal is not None
            ]
            modules = list(dict.fromkeys(modules))
            self._watch(modules)
        for message in failures:
            report.warn(message)
        if patched_late:
            _warn_about_stale_names(name, journals)
        if failures and self._strict:
            raise PatchError("; ".join(failures))
        self._apply_to_imported(modules)

    def _settle_unprepared(self, id: str, before: str, outcome: _Outcome, listings: Listings) -> None:
        """The state of a before-exec patch whose module ``before`` executed without its preparer, if it has."""
        if id in self._prepared or not is_imported(before):
            return
        state, reason, outcome.release = self._gate(id, None, listings, self._enabled)
        if state is None:
            state, reason = INACTIVE, f"{before} executed before gpushim.patch() was called"
        outcome.state, outcome.reason = state, reason

    def _apply(self, id: str, module: ModuleType, outcome: _Outcome, listings: Listings) -> None:
        patch = self[id]
        target = sys.modules.get(self._libraries[id].target)
        state, reason, outcome.release = self._gate(id, target, listings, self._enabled)
        if state is not None:
            outcome.state, outcome.reason = state, reason
            return
        from .journal import Journal

        journal = Journal(release=outcome.release)
        # _on_import settles a preparer-only patch before this; catalogue.validate refuses one with neither
        if not _run(patch.apply, module, journal, outcome):  # pyright: ignore[reportArgumentType]
            return
        outcome.journal, outcome.module = journal, module
        outcome.state, outcome.reason = APPLIED, _with_withdrawn(reason, patch, self._prepared.get(id))
        # the gate reads a release wherever it leaves the state to the patch
        report.log("info", f"{id} applied to {' '.join(outcome.release)}")  # pyright: ignore[reportCallIssue, reportArgumentType]

    def _fail(self, id: str, outcome: _Outcome, error: BaseException) -> str:
        """Record ``id`` as failed; the message names the patch, the release and the reason."""
        library = self._libraries[id]
        outcome.state = FAILED
        outcome.reason = f"{type(error).__name__}: {error}"
        release = " ".join(outcome.release) if outcome.release else library.target
        upstream = self._declarations[id].issue if id in self._declarations else "its upstream bug"
        named = id if library.origin == "gpushim" else f"{id} of {library.origin}"
        message = (
            f"gpushim could not apply {named} to {release} ({outcome.reason}); "
            f"{library.target} works as released, without the fix for {upstream}"
        )
        report.log("error", message)
        return message

    def _gate(
        self, id: str, module: ModuleType | None, listings: Listings | None, on: set[str], name: str | None = None
    ) -> tuple[str | None, str, Release | None]:
        """:func:`gpushim.gate.gate` of patch ``id``; an opt-in patch it leaves to apply is ``opt-in`` unless ``on``
        (``GPUSHIM_ENABLE``) names it."""
        from .gate import gate

        patch = self[id]
        state, reason, release = gate(patch, self._libraries[id], module, listings, name)
        if state is None and patch.opt_in and id not in on:
            return OPT_IN, f"an opt-in patch: {switches.ENABLE}={id} turns it on", release
        return state, reason, release

    def _forecast(
        self, id: str, off: set[str], on: set[str], listings: Listings | None
    ) -> tuple[str, str, Release | None]:
        """The state a patch not applied here has, or will have once its target is imported."""
        target = self._libraries[id].target
        try:
            module = sys.modules.get(target) if is_imported(target) else None
            state, reason, release = self._gate(id, module, listings, on)
        except BaseException as error:
            _raise_interruption(error, id)
            state, reason, release = FAILED, f"{type(error).__name__}: {error}", None
        if id in off:
            return DISABLED, f"{switches.DISABLE} turns it off", release
        if state is not None:
            return state, reason, release
        if is_imported(target):
            return INACTIVE, f"{target} is imported, and gpushim.patch() was not called in this process", release
        activate = "import gpushim.auto, or run under gpushim-run"
        return (
            INACTIVE,
            f"gpushim is not active in this process ({activate}, to apply it when {target} is imported)",
            release,
        )

    def journal(self, id: str) -> Journal | None:
        """What patch ``id`` replaced in this process, if it is applied."""
        with self._lock:
            outcome = self._outcomes.get(id)
            return outcome.journal if outcome is not None else None

    def record(self, id: str, listings: Listings | None = None) -> Record:
        """The status record of patch ``id``: its declaration, the installed release and its state.

        ``listings`` are shared by the records of one :meth:`status`.
        """
        library = self._libraries[id]
        try:
            hooks.call_back_for_missed()  # a target another import hook loaded is patched before it is reported
        except PatchError:
            pass  # a report never raises: the failure is in its record, and the next patch() raises it
        with self._lock:
            outcome = self._outcomes.get(id)
            settled = outcome is not None and outcome.state not in (PENDING, DISABLED) and not self._unfinished(id)
        off = {id} if outcome is not None and outcome.state == DISABLED else switches.disabled(self.ids)
        if settled and outcome is not None:
            state, reason, release = outcome.state, outcome.reason, outcome.release
        else:
            on = self._enabled if outcome is not None else switches.enabled(self.ids)
            state, reason, release = self._forecast(id, off, on, listings)
            if outcome is not None and state == INACTIVE:
                state, reason = PENDING, f"applies when {outcome.waits_for} is imported"
        try:
            patch = self[id]
        except BaseException as error:
            _raise_interruption(error, id)
            patch = None
        return Record(
            id=id,
            target=library.target,
            distribution=release[0] if release else None,
            installed_version=release[1] if release else None,
            affected=patch.affected if patch else None,
            fixed_in=patch.fixed_in if patch else None,
            state=state,
            reason=reason,
            upstream=patch.upstream if patch else None,
            summary=patch.summary if patch else None,
            origin=library.origin,
        )

    def _unfinished(self, id: str) -> bool:
        """Whether ``id`` has only prepared a module of a target whose import has not ended (or failed after it)."""
        outcome = self._outcomes[id]
        if outcome.state != APPLIED or outcome.journal is not None or id not in self._prepared:
            return False
        before = self._declarations[id].before  # a module to prepare: what self._prepared holds has one
        return not (is_imported(self._libraries[id].target) and before is not None and is_imported(before))

    def status(self) -> list[Record]:
        """One record per patch, in id order (see :meth:`record`), then one per problem."""
        from .releases import Listings

        listings = Listings()
        return [self.record(id, listings) for id in self._libraries] + list(self._problems)


def _raise_interruption(error: BaseException, id: str) -> None:
    """Raise ``error`` again where it interrupts the program rather than fails patch ``id``.

    A ``KeyboardInterrupt`` or ``GeneratorExit`` always does; a
    ``SystemExit`` does unless the code of the patch's own module raised it
    (a patch that exits is a broken patch; a signal handler's ``sys.exit()``
    that lands while gpushim works is the program's).
    """
    if not isinstance(error, INTERRUPTIONS):
        return
    if isinstance(error, SystemExit):
        traceback = error.__traceback__
        while traceback is not None and traceback.tb_next is not None:
            traceback = traceback.tb_next
        raiser = traceback.tb_frame.f_globals.get("__name__", "") if traceback is not None else ""
        if raiser == id or raiser.endswith(f".{id}"):
            return
    raise error


def _run(step: Callable[[ModuleType, Journal], None], module: ModuleType, journal: Journal, outcome: _Outcome) -> bool:
    """Run a patch's ``prepare`` or ``apply`` on ``module`` into ``journal``; whether it changed what it wanted.

    What it did is undone when it raises: :class:`NotAffected` settles the
    outcome, anything else goes on to the caller, which fails the patch.
    """
    try:
        step(module, journal)
    except NotAffected as why:
        journal.undo()
        outcome.state, outcome.reason = NOT_AFFECTED, str(why)
        return False
    except BaseException:
        journal.undo()
        raise
    return True


def _with_withdrawn(reason: str, patch: Patch, prepared: Journal | None) -> str:
    """``reason``, and what the patch's preparer provided in ``sys.modules`` and lent to shared objects while its
    module executed, if anything."""
    if prepared is None:
        return reason
    parts = [
        f"{', '.join(names)} {how}"
        for names, how in ((prepared.provided_names, "provided"), (prepared.lent_names, "lent"))
        if names
    ]
    if not parts:
        return reason
    withdrawn = f"{patch.before} executed with {' and '.join(parts)}, withdrawn since"
    return f"{reason}; {withdrawn}" if reason else withdrawn


def module_of(patch: Patch) -> str | None:
    """The name of the module ``patch`` changes in this install (``Patch.module``), found importing nothing.

    Of several names, the first that the imported release has; the last where none is found.
    """
    if patch.module is None or isinstance(patch.module, str):
        return patch.module
    *earlier, last = patch.module
    return next((name for name in earlier if _found_under_imported(name)), last)


def _found_under_imported(name: str) -> bool:
    """Whether module ``name`` is imported, or found on the path of its nearest imported package."""
    from importlib.machinery import PathFinder

    parts = name.split(".")
    imported = next((end for end in range(len(parts), 0, -1) if ".".join(parts[:end]) in sys.modules), 0)
    if imported == 0:
        return False
    try:
        path = getattr(sys.modules[".".join(parts[:imported])], "__path__", None)
        for end in range(imported + 1, len(parts) + 1):
            spec = PathFinder.find_spec(".".join(parts[:end]), list(path)) if path is not None else None
            if spec is None:
                return False
            path = spec.submodule_search_locations
    except Exception:
        return False
    return True


def _each(calls: Iterable[Callable[[], None]]) -> str:
    """Make every one of ``calls``, whichever of them raise; what they raised, in words ('' if nothing)."""
    raised = []
    for call in calls:
        try:
            call()
        except Exception as error:
            raised.append(str(error))
    return "; ".join(raised)


def _warn_about_stale_names(target: str, journals: list[Journal]) -> None:
    """Name module globals that were bound to a wrapped original before patching.

    ``from cupy import from_dlpack`` run before a late ``gpushim.patch()``
    keeps the unpatched function; such names cannot be patched, but the
    user can be told where they are.  The scan reads each module's own
    namespace dictionary, never its attributes, so a lazy module loads
    nothing, and whatever goes wrong ends the scan, never the patching.
    """
    ModuleType = type(sys)  # noqa: N806  (types.ModuleType, without an import that could fail)
    namespace = ModuleType.__dict__["__dict__"].__get__
    try:
        originals = {id(original) for journal in journals for original in journal.wrapped_originals}
        replaced = {(id(entry.owner), entry.name) for journal in journals for entry in journal.entries}
        stale = []
        for module_name, module in list(sys.modules.items()):
            if not issubclass(type(module), ModuleType):
                continue
            for name, value in list(namespace(module).items()):
                if id(value) in originals and (id(module), name) not in replaced:
                    stale.append(f"{module_name}.{name}")
    except Exception:
        return
    if stale:
        report.warn(
            f"gpushim patched {target} after it was imported; "
            f"these names still hold the unpatched object: {', '.join(sorted(stale))}"
        )
