"""Apply, undo and report patches.

A :class:`Registry` holds a set of patch declarations and what became of each.
Applying one means waiting for its target to finish importing (or acting at
once if it has), then gating on the installed release and running the
patch's ``apply``.  Everything that can go wrong in there is caught: the
user's ``import cupy`` must succeed even when a patch cannot be applied,
unless ``GPUSHIM_STRICT=1`` asks otherwise.
"""

from __future__ import annotations

import sys
from _thread import RLock

from . import switches
from .errors import GpushimWarning, NotAffected, PatchError, ShapeError
from .importhook import hooks, is_imported

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import ModuleType
    from typing import Callable, Optional

    from .declaration import Patch
    from .site import Site

APPLIED = "applied"
PENDING = "pending"
NOT_AFFECTED = "not-affected"
NOT_INSTALLED = "not-installed"
DISABLED = "disabled"
FAILED = "failed"


def _warn(message: str) -> None:
    import warnings

    warnings.warn(message, GpushimWarning, stacklevel=3)


def _log(level: str, message: str) -> None:
    import logging

    getattr(logging.getLogger("gpushim"), level)(message)


class _Outcome:
    """What happened to one patch in this process."""

    __slots__ = ("state", "reason", "site", "release", "callback")

    def __init__(self, state: str, reason: str = "") -> None:
        self.state = state
        self.reason = reason
        self.site: Site | None = None
        self.release: tuple[str, str] | None = None
        self.callback: Callable[[ModuleType], None] | None = None


class Registry:
    """A set of patches and what became of each of them in this process."""

    def __init__(self, patches: Iterable[Patch]) -> None:
        self._patches = {patch.id: patch for patch in patches}
        self._outcomes: dict[str, _Outcome] = {}
        self._lock = RLock()
        self._strict = False

    @property
    def ids(self) -> list[str]:
        return list(self._patches)

    @property
    def patches(self) -> list[Patch]:
        return list(self._patches.values())

    def __getitem__(self, id: str) -> Patch:
        return self._patches[id]

    def _select(self, ids: tuple[str, ...]) -> list[Patch]:
        unknown = [id for id in ids if id not in self._patches]
        if unknown:
            raise ValueError(f"unknown gpushim patch ids {unknown}; known: {self.ids}")
        return [self._patches[id] for id in ids or self._patches]

    def patch(self, *ids: str) -> None:
        """Apply the given patches (all by default) now or when their targets are imported."""
        switches.configure_logging()
        self._strict = switches.strict()
        off = switches.disabled(self.ids)
        for patch in self._select(ids):
            with self._lock:
                outcome = self._outcomes.get(patch.id)
                if outcome is not None and outcome.state in (APPLIED, PENDING):
                    continue
                if patch.id in off:
                    self._outcomes[patch.id] = _Outcome(DISABLED, f"{switches.DISABLE} turns it off")
                    continue
                outcome = self._outcomes[patch.id] = _Outcome(PENDING)
                late = is_imported(patch.target)
                outcome.callback = lambda module, patch=patch, late=late: self._on_import(patch, module, late)
            hooks.when_imported(patch.target, outcome.callback)

    def unpatch(self, *ids: str) -> None:
        """Undo the given patches (all by default), restoring the identical originals."""
        for patch in self._select(ids):
            with self._lock:
                outcome = self._outcomes.pop(patch.id, None)
                if outcome is None:
                    continue
                if outcome.site is not None:
                    outcome.site.undo()
                if outcome.callback is not None:
                    hooks.forget(patch.target, outcome.callback)
                _log("info", f"{patch.id} undone")

    def _on_import(self, patch: Patch, module: ModuleType, late: bool) -> None:
        with self._lock:
            outcome = self._outcomes.get(patch.id)
            if outcome is None or outcome.state != PENDING:
                return
            try:
                self._apply(patch, module, outcome)
            except Exception as error:
                self._fail(patch, outcome, error)
                return
        if late and outcome.site is not None:
            self._warn_about_stale_names(patch, outcome.site)

    def _apply(self, patch: Patch, module: ModuleType, outcome: _Outcome) -> None:
        from . import releases

        found = releases.installed(patch.distributions)
        if not found:
            outcome.state = NOT_INSTALLED
            outcome.reason = f"{patch.target} is imported but no distribution of it is installed"
            return
        outcome.release = distribution, version = _release_of(module, found)
        if not releases.is_affected(version, patch.affected):
            outcome.state = NOT_AFFECTED
            outcome.reason = f"{distribution} {version} is outside {patch.affected}"
            return
        from .site import Site

        site = Site()
        try:
            assert patch.apply is not None, f"{patch.id} declares no applier"
            patch.apply(module, site)
        except NotAffected as why:
            site.undo()
            outcome.state, outcome.reason = NOT_AFFECTED, str(why)
            return
        except BaseException:
            site.undo()
            raise
        outcome.site = site
        outcome.state, outcome.reason = APPLIED, ""
        _log("info", f"{patch.id} applied to {distribution} {version}")

    def _fail(self, patch: Patch, outcome: _Outcome, error: Exception) -> None:
        outcome.state = FAILED
        outcome.reason = f"{type(error).__name__}: {error}"
        release = " ".join(outcome.release) if outcome.release else patch.target
        message = (
            f"gpushim could not apply {patch.id} to {release} ({outcome.reason}); "
            f"{patch.target} works as released, without the fix for {patch.issue}"
        )
        _log("error", message)
        if self._strict:
            raise PatchError(message) from error
        _warn(message)

    def _warn_about_stale_names(self, patch: Patch, site: Site) -> None:
        """Name module globals that were bound to a wrapped original before patching.

        ``from cupy import from_dlpack`` run before a late ``gpushim.patch()``
        keeps the unpatched function; such names cannot be patched, but the
        user can be told where they are.
        """
        originals = {id(original) for original in site.wrapped_originals}
        replaced = {(id(owner), name) for owner, name in site.owners}
        stale = sorted(
            f"{module_name}.{name}"
            for module_name, module in list(sys.modules.items())
            for name, value in list(getattr(module, "__dict__", {}).items())
            if id(value) in originals and (id(module), name) not in replaced
        )
        if stale:
            _warn(
                f"{patch.id} was applied after {patch.target} was imported; "
                f"these names still hold the unpatched object: {', '.join(stale)}"
            )

    def status(self) -> list[dict[str, str | None]]:
        """One record per patch: its declaration, the installed release and its state."""
        off = switches.disabled(self.ids)
        records = []
        for patch in self._patches.values():
            state, reason, release = _forecast(patch, off)
            with self._lock:
                outcome = self._outcomes.get(patch.id)
            if outcome is not None and outcome.state != PENDING:
                state, reason = outcome.state, outcome.reason
                release = outcome.release or release
            records.append(
                {
                    "id": patch.id,
                    "target": patch.target,
                    "distribution": release[0] if release else None,
                    "installed_version": release[1] if release else None,
                    "affected": patch.affected,
                    "fixed_in": patch.fixed_in,
                    "state": state,
                    "reason": reason,
                    "upstream": patch.upstream,
                    "summary": patch.summary,
                }
            )
        return records


def _release_of(module: Optional[ModuleType], found: list[tuple[str, str]]) -> tuple[str, str]:
    """The installed distribution that ``module`` came from.

    When the imported module states a ``__version__``, one of the installed
    distributions must agree with it: a mismatch means the module on
    ``sys.path`` is not the release the metadata describes (a source tree
    or two distributions side by side), and patching it would be a guess.
    """
    from . import releases

    declared = getattr(module, "__version__", None)
    if not isinstance(declared, str):
        return found[0]
    for distribution, version in found:
        if releases.same_release(version, declared):
            return distribution, version
    installed = ", ".join(" ".join(release) for release in found)
    raise ShapeError(f"{module.__name__}.__version__ is {declared} but the installed distribution says {installed}")


def _forecast(patch: Patch, off: set[str]) -> tuple[str, str, Optional[tuple[str, str]]]:
    """The state a patch has, or will have once its target is imported, read from metadata."""
    from . import releases

    found = releases.installed(patch.distributions)
    try:
        release = _release_of(sys.modules.get(patch.target), found) if found else None
    except ShapeError as mismatch:
        return FAILED, str(mismatch), None
    if patch.id in off:
        return DISABLED, f"{switches.DISABLE} turns it off", release
    if release is None:
        return NOT_INSTALLED, f"no distribution of {patch.target} is installed", None
    distribution, version = release
    if not releases.is_affected(version, patch.affected):
        return NOT_AFFECTED, f"{distribution} {version} is outside {patch.affected}", release
    if is_imported(patch.target):
        return PENDING, f"{patch.target} is imported but gpushim.patch() has not applied this", release
    return PENDING, f"applies when {patch.target} is imported", release
