"""The declaration every patch module makes about itself.

A patch module is the single source of truth for its metadata: the README's
patch table, ``python -m gpushim status`` and the self-test all read the
:class:`Patch` object the module defines at its top.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Callable, Optional

    from .site import Site

    Applier = Callable[[ModuleType, Site], None]
    Prober = Callable[[], Optional[str]]


class Patch:
    """An upstream fix, the releases that lack it, and how to backport it.

    ``affected`` is a PEP 440 specifier of the releases that have the bug;
    ``fixed_in`` is the first release that has the upstream fix.  The
    ``apply`` and ``probe`` functions are attached with the :meth:`applier`
    and :meth:`prober` decorators so that a patch module can state its
    metadata first and its mechanics after.
    """

    __slots__ = (
        "id",
        "target",
        "distributions",
        "affected",
        "fixed_in",
        "issue",
        "fix",
        "summary",
        "apply",
        "probe",
    )

    def __init__(
        self,
        *,
        id: str,
        target: str,
        distributions: tuple[str, ...],
        affected: str,
        fixed_in: str,
        issue: str,
        fix: str,
        summary: str,
    ) -> None:
        self.id = id
        self.target = target
        self.distributions = distributions
        self.affected = affected
        self.fixed_in = fixed_in
        self.issue = issue
        self.fix = fix
        self.summary = summary
        self.apply: Applier | None = None
        self.probe: Prober | None = None

    @property
    def upstream(self) -> str:
        return f"{self.issue}, fixed by {self.fix}"

    def applier(self, function: Applier) -> Applier:
        """Declare ``function(module, site)`` as the way to apply this patch."""
        self.apply = function
        return function

    def prober(self, function: Prober) -> Prober:
        """Declare ``function()`` as this patch's minimal reproduction.

        It runs in a fresh interpreter and returns a description of the
        bug when the bug shows, ``None`` when behaviour is right; crashing
        the interpreter also counts as the bug showing.
        """
        self.probe = function
        return function

    def __repr__(self) -> str:
        return f"<Patch {self.id} for {self.target} {self.affected}>"
