"""Which metadata folders of a ``sys.path`` directory can declare entry points, remembered between processes.

Finding other distributions' patches (:mod:`gpushim.plugins`) would read
the ``entry_points.txt`` of every distribution on ``sys.path``: an ``open``
each, some 30 µs, 300 ms of ``import gpushim.auto`` in an environment of
10,000.  For a directory of more than :data:`LARGE` metadata folders, what
it installs and which of its folders declare the group are remembered in a
file of the user's cache (``$XDG_CACHE_HOME/gpushim``, else
``~/.cache/gpushim``), with the directory's state: device, inode and
modification time.

Installers add and remove whole metadata folders, which changes that
state; what is remembered is used only while it is the same, and only
what a directory held two seconds before it was listed is remembered (a
change within a file system's timestamp granularity would go unseen).
The folders that declared are read again each time, as is every
``.egg-info``, which ``setup.py develop`` rewrites in place.  A cache
that cannot be read or written is no cache: everything is read.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from _thread import get_ident

from . import releases

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Container
    from typing import Callable

    Folders = list[tuple[str, list[str]]]
    Declares = Callable[[releases._Listing, list[str]], bool]
    State = tuple[int, int, int]

LARGE = 32  # metadata folders; reading fewer costs under a millisecond
_SETTLED_NS = 2_000_000_000
_FORMAT = "gpushim entry points 2"
_HEAD = 64 * 1024  # bytes: the head of a cache file, but for thousands of declaring folders
_LIMIT = 64 * 1024 * 1024  # bytes


def candidates(declares: Declares) -> list[tuple[releases._Listing, Container[str], Folders]]:
    """``(listing, names, folders)`` for each ``sys.path`` entry, in order.

    ``names`` are the normalised names of every distribution installed
    there; ``folders``, in the order of their names, ``(name, folders)`` of
    those whose metadata folders may declare entry points: all of them,
    unless the entry is a directory remembered as it is, where
    ``declares(listing, folders)`` said so, or a folder is an ``.egg-info``.
    """
    found = []
    for path in sys.path:
        if isinstance(path, str):
            found.append(_candidates(path or ".", declares))
    return found


def _candidates(root: str, declares: Declares) -> tuple[releases._Listing, Container[str], Folders]:
    began = time.time_ns()
    state = _state(root)
    file = _file(state) if state is not None else None
    if state is not None and file is not None:
        remembered = _recall(file, root, state)
        if remembered is not None:
            return (releases._Listing(root, listed=False), *remembered)
    listing = releases._Listing(root)
    every = releases.metadata_folders(listing)
    if state is None or file is None or len(every) <= LARGE or began - state[2] <= _SETTLED_NS:
        return listing, every, list(every.items())
    folders = [(name, each) for name, each in every.items() if _egg_info(each) or declares(listing, each)]
    _remember(file, root, state, every, folders)
    return listing, every, folders


def _egg_info(folders: list[str]) -> bool:
    return any(folder.lower().endswith(".egg-info") for folder in folders)


def _state(root: str) -> State | None:
    try:
        status = os.stat(root)
    except (OSError, ValueError):
        return None
    return (status.st_dev, status.st_ino, status.st_mtime_ns) if stat.S_ISDIR(status.st_mode) else None


def _file(state: State) -> str | None:
    """The cache file of the directory in ``state``, named by its device and inode; ``None`` where the user has no
    cache folder."""
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(cache):
        return None  # no home
    return os.path.join(cache, "gpushim", f"entry-points-{state[0]}-{state[1]}.txt")


def _recall(file: str, root: str, state: State) -> tuple[Container[str], Folders] | None:
    """What ``file`` remembers of ``root``, if it remembers ``root`` as it is now.

    The file's head, up to its first empty line, names the directory, its
    state and the folders to read; then comes the line of every name
    installed there, read only if a later ``sys.path`` entry asks (:class:`_Names`).
    """
    for limit in (_HEAD, _LIMIT):
        data = releases.regular_file(file, limit)
        if data is None:
            return None
        head, end, _ = data.partition(b"\n\n")
        if end:
            break
    else:
        return None
    lines = head.split(b"\n")
    if lines[:3] != [_encode(_FORMAT), _encode(root), _encode(_stated(state))]:
        return None
    folders = []
    for line in lines[3:]:
        name, *each = _decode(line).split("\t")
        if not each:
            return None
        folders.append((name, each))
    return _Names(root, file, head + end), folders


class _Names:
    """The names of the distributions installed in a remembered directory, read when first asked about.

    From the cache file whose head said what to read, if it still starts
    so; else (replaced since, cut short) from a listing of the directory.
    """

    __slots__ = ("root", "file", "head", "line")

    def __init__(self, root: str, file: str, head: bytes) -> None:
        self.root, self.file, self.head = root, file, head
        self.line: bytes | None = None

    def __contains__(self, name: object) -> bool:
        if self.line is None:
            self.line = self._read()
        return isinstance(name, str) and b"\t" + _encode(name) + b"\t" in self.line

    def _read(self) -> bytes:
        data = releases.regular_file(self.file, _LIMIT) or b""
        if data.startswith(self.head) and data.endswith(b"\n") and b"\n" not in data[len(self.head) : -1]:
            return b"\t" + data[len(self.head) : -1] + b"\t"
        every = releases.metadata_folders(releases._Listing(self.root))
        return _encode("\t" + "\t".join(every) + "\t")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _stated(state: State) -> str:
    return " ".join(map(str, state))


def _remember(file: str, root: str, state: State, every: dict[str, list[str]], folders: Folders) -> None:
    """Write what ``root`` holds to ``file``, replacing it whole; nothing where a name would break a line."""
    lines = [_FORMAT, root, _stated(state), *("\t".join([name, *each]) for name, each in folders), "", "\t".join(every)]
    if any("\n" in line for line in lines) or any("\t" in name for name in (root, *every)):
        return
    if any("\t" in folder for _, each in folders for folder in each):
        return
    temporary = f"{file}.{os.getpid()}.{get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(file), exist_ok=True)
        with open(temporary, "wb") as stream:
            stream.write(_encode("\n".join([*lines, ""])))
        os.replace(temporary, file)
    except Exception:  # refused (a read-only home, an audit hook): the next process reads everything again
        try:
            os.unlink(temporary)
        except OSError:
            pass
