"""Where patches come from: the modules under a patches package, found without a list.

Every folder of ``gpushim.patches`` is a library: its ``__init__`` says the
module it patches (``TARGET = "nvidia.dali"``) and the distributions that
install it (``DISTRIBUTIONS``), once.  Every other module in the folder whose
name does not start with ``_`` is one patch, and its id is its module path
inside the package: ``patches/warp/cai_missing_strides.py`` is
``warp.cai_missing_strides``.

Finding them lists folders and file names and imports the library packages
only, so ``import gpushim.auto`` costs the same with five patches or five
hundred; a patch module is imported when its target finishes importing, or
when something asks for its declaration (status, the self-test, the CLI).
Patches are found on the file system, where pip installs them.  Other
distributions add library folders of their own (see :mod:`gpushim.plugins`).
"""

from __future__ import annotations

import os

from .declaration import Patch
from .errors import InvalidDeclaration
from .locks import imports_for_gpushim

TYPE_CHECKING = False  # typing costs ~2 ms to import; `import gpushim.auto` has a 5 ms budget
if TYPE_CHECKING:
    from typing import Callable


class Library:
    """The patches of one target library, known by id before any of them is loaded."""

    __slots__ = ("name", "target", "distributions", "ids", "_load", "origin")

    def __init__(
        self,
        name: str,
        target: str,
        distributions: tuple[str, ...],
        ids: list[str],
        load: Callable[[str], Patch],
        origin: str = "gpushim",
    ) -> None:
        self.name = name
        self.target = target
        self.distributions = tuple(distributions)
        self.ids = ids
        self._load = load
        self.origin = origin  # the distribution the patches come from

    def load(self, id: str) -> Patch:
        """The declaration of patch ``id``, checked; raises whatever its module raises."""
        patch = self._load(id)
        validate(patch, id)
        return patch

    def __repr__(self) -> str:
        return f"<Library {self.name}: {self.target} from {', '.join(self.distributions)}>"


def discover(package_name: str) -> list[Library]:
    """The libraries under the package ``package_name``, in name order."""
    package = __import__(package_name, fromlist=["__path__"])
    libraries = []
    for name, folder in library_folders(package.__path__):
        library = __import__(f"{package_name}.{name}", fromlist=["TARGET"])
        libraries.append(
            Library(name, library.TARGET, library.DISTRIBUTIONS, patch_ids(name, folder), module_loader(package_name))
        )
    return libraries


def library_folders(folders: list[str]) -> list[tuple[str, str]]:
    """``(name, path)`` of each library folder (a package not named ``_*``) in the package folders ``folders``."""
    return [
        (entry.name, entry.path)
        for folder in folders
        for entry in sorted(os.scandir(folder), key=lambda entry: entry.name)
        if not entry.name.startswith(("_", ".")) and os.path.isfile(os.path.join(entry.path, "__init__.py"))
    ]


def patch_ids(library: str, folder: str) -> list[str]:
    """The ids of the patch modules in the library folder ``folder``, sorted."""
    return sorted(
        f"{library}.{name[:-3]}" for name in os.listdir(folder) if name.endswith(".py") and not name.startswith("_")
    )


def module_loader(package_name: str) -> Callable[[str], Patch]:
    imports_for_gpushim(package_name.partition(".")[0])

    def load(id: str) -> Patch:
        module = __import__(f"{package_name}.{id}", fromlist=["patch"])
        patch = getattr(module, "patch", None)
        if not isinstance(patch, Patch):
            raise InvalidDeclaration(f"{module.__name__} defines no gpushim.Patch named 'patch'")
        return patch

    return load


def validate(patch: Patch, id: str) -> None:
    """Raise :class:`InvalidDeclaration` unless ``patch`` is a complete declaration of ``id``."""
    from . import releases

    if patch.id != id:
        raise InvalidDeclaration(f"the module of {id} declares the id {patch.id!r}")
    if not callable(patch.probe):
        raise InvalidDeclaration(f"{id} declares no prober")
    if patch.before is None and not callable(patch.apply):
        raise InvalidDeclaration(f"{id} declares no applier")
    if patch.before is not None and not callable(patch.prepare):
        raise InvalidDeclaration(f"{id} acts before {patch.before} but declares no preparer")
    python = [("python", patch.python)] if patch.python is not None else []
    unreached = [("not_backported", specifier) for specifier in patch.not_backported]
    for name, specifier in [("affected", patch.affected), *unreached, *patch.only_with.items(), *python]:
        try:
            releases.is_affected("0", specifier)
        except Exception as error:
            raise InvalidDeclaration(f"{id}: {name} {specifier!r} is not a version specifier ({error})") from None
    if patch.fixed_in is None:
        return
    try:
        fixed = releases.is_affected(patch.fixed_in, patch.affected)
    except Exception as error:
        raise InvalidDeclaration(f"{id}: fixed_in {patch.fixed_in!r} is not a version ({error})") from None
    if fixed:
        raise InvalidDeclaration(f"{id}: fixed_in {patch.fixed_in} lies inside affected {patch.affected}")
    for specifier in patch.not_backported:
        if releases.is_affected(patch.fixed_in, specifier):
            raise InvalidDeclaration(f"{id}: fixed_in {patch.fixed_in} lies inside not_backported {specifier}")
