"""The state each patch must end in, derived from its declaration and the installed distributions alone.

The contract (:mod:`gpushim.testing`) and the matrix's cells compare it
with ``gpushim.status()``; it needs :mod:`packaging` but no test framework.
"""

from __future__ import annotations

import importlib.util
import sys

import gpushim
from gpushim import switches
from gpushim.states import APPLIED, NOT_AFFECTED, NOT_BACKPORTED, NOT_INSTALLED, OPT_IN


def installed_versions() -> dict[str, str]:
    """Every distribution of this environment, by normalised name."""
    from importlib import metadata

    from packaging.utils import canonicalize_name

    return {canonicalize_name(dist.metadata["Name"]): dist.version for dist in metadata.distributions()}


def expected_state(id: str, installed: dict[str, str] | None = None, enabled: set[str] | None = None) -> str:
    """``applied``, ``opt-in``, ``not-affected``, ``not-backported`` or ``not-installed``: what patch ``id`` must end
    as with ``installed``.

    An opt-in patch that would apply is ``opt-in`` unless ``enabled`` (by
    default the ids ``GPUSHIM_ENABLE`` names) holds it.
    """
    from packaging.utils import canonicalize_name

    installed = installed_versions() if installed is None else installed
    patch, library = gpushim.registry()[id], gpushim.registry().library(id)
    versions = [
        installed[canonicalize_name(name)] for name in library.distributions if canonicalize_name(name) in installed
    ]
    if not versions:
        return NOT_INSTALLED
    unreached = not _contains(versions[0], patch.affected) and any(
        _contains(versions[0], spec) for spec in patch.not_backported
    )
    conditions = [] if unreached else [(versions[0], patch.affected)]
    conditions += [(installed.get(canonicalize_name(name)), spec) for name, spec in patch.only_with.items()]
    if patch.python is not None:
        conditions.append((".".join(map(str, sys.version_info[:3])), patch.python))
    for name in patch.missing:
        module, _, path = name.partition(":")
        if _in_namespaces(module, path) if path else importlib.util.find_spec(name) is not None:
            return NOT_AFFECTED
    if not all(version is not None and _contains(version, spec) for version, spec in conditions):
        return NOT_AFFECTED
    if unreached:
        return NOT_BACKPORTED
    if patch.opt_in and id not in (switches.enabled(gpushim.registry().ids) if enabled is None else enabled):
        return OPT_IN
    return APPLIED


def _contains(version: str, specifier: str) -> bool:
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(specifier).contains(version, prereleases=True)


def _in_namespaces(module: str, path: str) -> bool:
    """Whether each name of dotted ``path`` is in the namespace of what the one before names, or of its type's MRO."""
    owner = importlib.import_module(module)
    for name in path.split("."):
        spaces = owner.__mro__ if isinstance(owner, type) else (owner, *type(owner).__mro__)
        found = [vars(space)[name] for space in spaces if name in vars(space)]
        if not found:
            return False
        owner = found[0]
    return True
