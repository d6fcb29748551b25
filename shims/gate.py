"""Whether an install is affected: the gate a patch passes before anything of it runs.

The release is the one the process imports, not merely one on the path:
the distribution whose folder holds the imported module and whose version
agrees with its ``__version__``.  The environment a patch names (releases
of other distributions, the Python version, modules that must be missing)
is read from metadata and paths, importing nothing.  Loaded with the first
patch it gates, so that ``import gpushim.auto`` does not pay for it.
"""

from __future__ import annotations

import sys

from . import releases
from .errors import TargetMismatch
from .importhook import is_imported
from .states import NOT_AFFECTED, NOT_BACKPORTED, NOT_INSTALLED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

    from .catalogue import Library
    from .declaration import Patch
    from .releases import Listings

    Release = tuple[str, str]


def gate(
    patch: Patch, library: Library, module: ModuleType | None, listings: Listings | None, name: str | None = None
) -> tuple[str | None, str, Release | None]:
    """``(state, reason, release)`` when the install decides the patch's state, else ``(None, why, release)``.

    A release in one of the patch's ``not_backported`` ranges, in an
    environment that has the bug, is ``not-backported``, with its reason.

    The release is read now, starting from ``module`` (the target, or the
    module ``name`` of it about to execute) when there is one: the
    distribution whose folder holds it, and whose version agrees with its
    ``__version__``.  ``why`` says which conditions of the environment
    hold, in words a user can act on.  Raises :class:`TargetMismatch` when
    the release cannot be told.
    """
    if module is None:
        found = releases.installed(library.distributions, listings)
    else:
        origin = getattr(module, "__file__", None)
        found = releases.installed_with(name or library.target, origin, library.distributions, listings)
    if not found:
        return NOT_INSTALLED, f"no distribution of {library.target} is installed", None
    release = _release_of(module, found)
    distribution, version = release
    unreached = None
    if not releases.is_affected(version, patch.affected):
        unreached = next((spec for spec in patch.not_backported if releases.is_affected(version, spec)), None)
        if unreached is None:
            return NOT_AFFECTED, f"{distribution} {version} is outside {patch.affected}", release
    held = []
    for other, specifier in patch.only_with.items():
        theirs = _dependency_release(other, listings)
        if theirs is None:
            return NOT_AFFECTED, f"the bug needs {other} {specifier}, which is not installed", release
        their_version = _version(theirs)
        if not releases.is_affected(their_version, specifier):
            return NOT_AFFECTED, f"the bug needs {other} {specifier}; {theirs[0]} {their_version} is outside", release
        held.append(f"{theirs[0]} {their_version} {specifier}")
    if patch.python is not None:
        python = ".".join(map(str, sys.version_info[:3]))
        if not releases.is_affected(python, patch.python):
            return NOT_AFFECTED, f"the bug needs Python {patch.python}; this is Python {python}", release
        held.append(f"Python {python} {patch.python}")
    for missing in patch.missing:
        what = f"no attribute {missing}" if ":" in missing else f"no module named {missing}"
        if (_holds if ":" in missing else _findable)(missing):
            return NOT_AFFECTED, f"the bug needs {what}, and {missing} is found", release
        held.append(what)
    if unreached is not None:
        why = f"{distribution} {version} has the bug; not backported to {unreached}"
        return NOT_BACKPORTED, f"{why}: {patch.not_backported[unreached]}", release
    return None, "; ".join(held), release


def _version(release: tuple[str, str | None]) -> str:
    distribution, version = release
    if not isinstance(version, str):
        raise TargetMismatch(f"the metadata of {distribution} has no Version")
    return version


def _release_of(module: ModuleType | None, found: list[tuple[str, str | None]]) -> Release:
    """The installed distribution that ``module`` came from.

    When the imported module states a ``__version__``, one of the installs
    must agree with it: a mismatch means the module on ``sys.path`` is not
    the release the metadata describes (a source tree or two distributions
    side by side), and patching it would be a guess.
    """
    declared = getattr(module, "__version__", None)
    if module is None or not isinstance(declared, str):
        return found[0][0], _version(found[0])
    for distribution, version in found:
        if version is not None and releases.same_release(version, declared):
            return distribution, version
    installed = ", ".join(f"{distribution} {version}" for distribution, version in found)
    raise TargetMismatch(f"{module.__name__}.__version__ is {declared} but the installed distribution says {installed}")


def _dependency_release(distribution: str, listings: Listings | None) -> tuple[str, str | None] | None:
    """The release of ``distribution`` that the process runs with: its module's ``__version__`` once imported.

    The module is the distribution's name written as an import name
    (``numpy``); before it is imported, or when it states no version, the
    first install on the path says.
    """
    name = distribution.lower().replace("-", "_")
    if is_imported(name):
        declared = getattr(sys.modules[name], "__version__", None)
        if isinstance(declared, str):
            return distribution, declared
    found = releases.installed((distribution,), listings)
    return found[0] if found else None


def _findable(name: str) -> bool:
    """Whether top-level module ``name`` is imported or one of the finders on ``sys.meta_path`` finds it.

    Finding it imports nothing, but setuptools' ``_distutils_hack`` finds
    ``distutils`` by importing ``setuptools._distutils``, and setuptools
    with it (about 270 modules): for that finder, the path is searched for
    that package instead.
    """
    if name in sys.modules:
        return True
    for finder in list(sys.meta_path):
        try:
            if type(finder).__module__ == "_distutils_hack":
                found = name == "distutils" and _setuptools_has_distutils()
            else:
                found = getattr(finder, "find_spec", lambda *_: None)(name, None) is not None
        except Exception:
            return True  # a finder that fails cannot be said to lack it
        if found:
            return True
    return False


def _setuptools_has_distutils() -> bool:
    import os
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("setuptools")
    folders = (spec.submodule_search_locations or []) if spec is not None else []
    return any(os.path.isfile(os.path.join(folder, "_distutils", "__init__.py")) for folder in folders)


def _holds(path: str) -> bool:
    """Whether ``module:attribute.path`` names something, looked up without running any code of it.

    The module is imported to look (a patch names one its target imports
    anyway).  Each step is read as :func:`inspect.getattr_static` reads it,
    so no property, module ``__getattr__`` or deprecation warning runs.
    """
    from importlib import import_module
    from inspect import getattr_static

    module, _, names = path.partition(":")
    owner = import_module(module)
    try:
        for name in names.split("."):
            owner = getattr_static(owner, name)
    except AttributeError:
        return False
    return True
