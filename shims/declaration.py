"""The declaration every patch module makes about itself.

A patch module is the single source of truth for its bug: the docs' patch
table, ``python -m gpushim status``, the self-test and the matrix's expected
states all read the :class:`Patch` object the module defines as ``patch``.
What it patches (the import name and the distributions that install it) is
said once per library, by the ``TARGET`` and ``DISTRIBUTIONS`` of the
library's package (see :mod:`gpushim.catalogue`).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~2 ms to import; `import gpushim.auto` has a 5 ms budget
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Callable, Optional

    from .journal import Journal

    Applier = Callable[[ModuleType, Journal], None]
    Prober = Callable[[], Optional[str]]
    Preparer = Callable[[ModuleType, Journal], None]


class Patch:
    """An upstream fix, the releases that lack it, and how to backport it.

    ``affected`` is a PEP 440 specifier of the target's releases that have the
    bug; ``fixed_in`` is the first release with the upstream fix, None where
    no release has one (a drift that upstream has not fixed).  ``only_with``
    names other distributions the bug needs, with their ranges (the NumPy 2
    bugs of CuPy: ``{"numpy": ">=2"}``); an install outside them is
    ``not-affected``.  ``module`` names the module the patch changes when the
    library's own import does not load it (``warp.optim``,
    ``cupyx.scipy.linalg``): the patch then applies once that module is
    imported, if ever, and ``apply`` receives it.  Where releases moved the
    code, a tuple names each place, the defining module first (Warp 1.10:
    ``("warp._src.optim.linear", "warp.optim.linear")``): the first of them
    that the imported release has is the one.  The ``apply`` and ``probe`` functions are attached with
    the :meth:`applier` and :meth:`prober` decorators so that a patch module
    states its metadata first and its mechanics after.

    A fix for a release meeting an environment that moved on may have to act
    before one of the target's modules executes: ``before`` names that module
    and :meth:`preparer` attaches what runs then (a patch may also have an
    ``apply``).  Beside ``only_with``, the environment gates are ``python``, a
    specifier of the Python version, and ``missing``, top-level modules that
    the bug needs to be absent (found without importing them) or attributes
    written ``module:attribute.path`` (``ast:Constant.n``, looked up without
    running code: no property or module ``__getattr__``).

    ``not_backported`` maps specifiers of releases that have the bug but
    that the backport does not reach to the reason why (``{">=1.0.2,<1.6.0":
    "..."}``): there the state is ``not-backported``, with that reason,
    rather than ``not-affected``, and nothing is patched.
    An ``opt_in`` patch changes what code that relied on the released
    behaviour does (Warp 1.13's short-circuiting ``and``): it applies only
    where ``GPUSHIM_ENABLE`` names it, and is ``opt-in`` elsewhere in range.
    """

    __slots__ = (
        "id",
        "affected",
        "fixed_in",
        "issue",
        "fix",
        "summary",
        "only_with",
        "module",
        "before",
        "python",
        "missing",
        "not_backported",
        "opt_in",
        "apply",
        "prepare",
        "probe",
    )

    def __init__(
        self,
        *,
        id: str,
        affected: str,
        fixed_in: str | None,
        issue: str,
        fix: str,
        summary: str,
        only_with: dict[str, str] | None = None,
        module: str | tuple[str, ...] | None = None,
        before: str | None = None,
        python: str | None = None,
        missing: tuple[str, ...] = (),
        not_backported: dict[str, str] | None = None,
        opt_in: bool = False,
    ) -> None:
        self.id = id
        self.affected = affected
        self.fixed_in = fixed_in
        self.issue = issue
        self.fix = fix
        self.summary = summary
        self.only_with = dict(only_with or {})
        self.module = module
        self.before = before
        self.python = python
        self.missing = tuple(missing)
        self.not_backported = dict(not_backported or {})
        self.opt_in = opt_in
        self.apply: Applier | None = None
        self.prepare: Preparer | None = None
        self.probe: Prober | None = None

    @property
    def library(self) -> str:
        """The library folder the patch lives in: ``warp`` for ``warp.cai_missing_strides``."""
        return self.id.partition(".")[0]

    @property
    def upstream(self) -> str:
        return f"{self.issue}, fixed by {self.fix}"

    def applier(self, function: Applier) -> Applier:
        """Declare ``function(module, journal)`` as the way to apply this patch."""
        self.apply = function
        return function

    def preparer(self, function: Preparer) -> Preparer:
        """Declare ``function(module, journal)`` as what runs before module ``before`` executes.

        ``module`` is that module, created but not yet executed.  What the
        journal provides to it and lends it is withdrawn once it has executed.
        """
        self.prepare = function
        return function

    def prober(self, function: Prober) -> Prober:
        """Declare ``function()`` as this patch's minimal reproduction.

        It runs in a fresh interpreter and returns a description of the
        bug when the bug shows, ``None`` when behaviour is right; raising,
        or crashing the interpreter, also counts as the bug showing.
        """
        self.probe = function
        return function

    def __repr__(self) -> str:
        return f"<Patch {self.id} {self.affected}>"
