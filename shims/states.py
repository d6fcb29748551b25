"""The states a patch can be in, and the record ``gpushim.status()`` gives of each patch."""

from __future__ import annotations

APPLIED = "applied"  # in place in this process
PENDING = "pending"  # gpushim is active here; applies when the target finishes importing
INACTIVE = "inactive"  # would apply, but nothing called gpushim.patch() in this process
NOT_AFFECTED = "not-affected"  # the installed release (or what it runs with) lacks the bug
NOT_BACKPORTED = "not-backported"  # the installed release has the bug, and the backport does not reach it (the reason)
NOT_INSTALLED = "not-installed"  # no distribution of the target is installed
OPT_IN = "opt-in"  # affected, but the patch changes semantics code may rely on: on only where GPUSHIM_ENABLE names it
DISABLED = "disabled"  # turned off by GPUSHIM_DISABLE
FAILED = "failed"  # could not be applied; the target works as released (see the reason)

ALL = (APPLIED, PENDING, INACTIVE, NOT_AFFECTED, NOT_BACKPORTED, NOT_INSTALLED, OPT_IN, DISABLED, FAILED)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Union

    # A record, or a dict of its fields: as_dict()'s, read back from JSON, or a self-test result's.
    Fields = Union["Record", Mapping[str, Any]]


class Record:
    """What ``gpushim.status()`` says of one patch: its declaration, its target's installed release, its state.

    Fields read as attributes (``record.state``) or by name (``record["state"]``,
    as the plain dicts of earlier releases were read: ``get``, ``keys`` and
    ``dict(record)`` work as on them); :meth:`as_dict` is the
    form ``gpushim status --json`` prints.  ``distribution`` and
    ``installed_version`` are None where no release could be told;
    ``affected``, ``fixed_in``, ``upstream`` and ``summary`` where the patch
    module cannot be loaded.  ``origin`` is the distribution the patch comes
    from: ``gpushim``, or the one that added it through the ``gpushim.patches``
    entry point group.
    """

    FIELDS = (
        "id",
        "target",
        "distribution",
        "installed_version",
        "affected",
        "fixed_in",
        "state",
        "reason",
        "upstream",
        "summary",
        "origin",
    )
    __slots__ = FIELDS

    def __init__(
        self,
        id: str,
        target: str | None,
        distribution: str | None,
        installed_version: str | None,
        affected: str | None,
        fixed_in: str | None,
        state: str,
        reason: str,
        upstream: str | None,
        summary: str | None,
        origin: str = "gpushim",
    ) -> None:
        self.id, self.target, self.state, self.reason = id, target, state, reason
        self.distribution, self.installed_version = distribution, installed_version
        self.affected, self.fixed_in, self.upstream, self.summary = affected, fixed_in, upstream, summary
        self.origin = origin

    # Read by name, a field is typed as a plain dict's value is: the attributes carry the precise types.
    def __getitem__(self, field: str) -> Any:
        if field not in self.FIELDS:
            raise KeyError(field)
        return getattr(self, field)

    def get(self, field: str, default: Any = None) -> Any:
        return getattr(self, field) if field in self.FIELDS else default

    def keys(self) -> tuple[str, ...]:
        return self.FIELDS

    def __iter__(self):
        return iter(self.FIELDS)

    def __len__(self) -> int:
        return len(self.FIELDS)

    def as_dict(self) -> dict[str, str | None]:
        return {field: getattr(self, field) for field in self.FIELDS}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self.as_dict() == other.as_dict()

    __hash__ = None  # pyright: ignore[reportAssignmentType]  (unhashable, as the dicts it stands for)

    def __repr__(self) -> str:
        return f"<Record {self.id} {self.state}>"
