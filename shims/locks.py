"""Locks, and the imports gpushim makes while it holds them, that the child of ``os.fork()`` finds free.

A thread that holds a lock when another thread forks is not copied into
the child, so the child would wait forever for the lock: its next
``import cupy`` would hang.  The child finds gpushim's locks free unless
its one thread, the one that forked, holds them.  A lost thread may also
have been importing a module for gpushim (wrapt, a module of gpushim, a
patch module) and holds that module's import lock: the child forgets the
lock and the half-executed module, and imports it anew when it needs it.
What the lost thread was doing stays half done in the child, as it would
without gpushim.

Taking and releasing a lock is C code alone, with no Python frame between
the two where a signal handler could raise (a Ctrl-C that leaves a lock
taken would hang every other thread).
"""

from __future__ import annotations

import os
import sys

# _thread rather than threading: threading costs ~1 ms to import, and `import gpushim.auto` has a 5 ms budget.
from _thread import RLock, get_ident
from _weakref import ref

_imported_for_gpushim = {"gpushim", "wrapt"}  # packages whose modules gpushim imports while it works


def ForkSafeRLock() -> RLock:  # noqa: N802  (a lock type to its users)
    """A reentrant lock that the child of ``os.fork()`` finds free unless the forking thread holds it."""
    lock = RLock()
    held = lock if hasattr(lock, "_at_fork_reinit") else _Renewable(lock)  # Python 3.9 on, else 3.8
    if hasattr(os, "register_at_fork"):  # POSIX
        os.register_at_fork(after_in_child=_renewal(ref(held)))
    return held  # pyright: ignore[reportReturnType]  (a _Renewable is used as a lock is: with, and nothing else)


def imports_for_gpushim(package: str) -> None:
    """Count the modules of ``package`` among those gpushim imports while it works (a catalogue of patches)."""
    _imported_for_gpushim.add(package)


class _Renewable:
    """Python 3.8's fork-safe lock: a lock replaced in the child.

    ``with`` reads ``__enter__`` and ``__exit__`` before it calls either, so
    the lock's own C methods run, as they do for a plain lock.
    """

    __slots__ = ("_lock", "__weakref__")

    def __init__(self, lock: RLock) -> None:
        self._lock = lock

    @property
    def __enter__(self):
        return self._lock.__enter__

    @property
    def __exit__(self):
        return self._lock.__exit__


def _renewal(lock: ref):
    """What frees ``lock``, if it still exists, in a child that does not hold it; a weak reference, so that a lock
    lives no longer for being fork-safe."""

    def renew() -> None:
        held = lock()
        inner = held._lock if isinstance(held, _Renewable) else held
        if inner is None or inner._is_owned():  # pyright: ignore[reportAttributeAccessIssue]  (as threading asks)
            return
        if isinstance(held, _Renewable):
            held._lock = RLock()
        else:
            inner._at_fork_reinit()  # pyright: ignore[reportAttributeAccessIssue]  (Python 3.9 on: threading uses it)

    return renew


def _forget_imports_of_lost_threads() -> None:
    """Free the import locks that lost threads hold on gpushim's imports, and drop the modules they left half done."""
    bootstrap = sys.modules["_frozen_importlib"]
    locks = getattr(bootstrap, "_module_locks", {})
    own = tuple(_imported_for_gpushim)
    for name, reference in list(locks.items()):
        if not (name in own or name.startswith(tuple(f"{package}." for package in own))):
            continue
        lock = reference()
        if lock is None or getattr(lock, "owner", None) in (None, get_ident()):
            continue
        locks.pop(name, None)
        module = sys.modules.get(name)
        if module is not None and getattr(getattr(module, "__spec__", None), "_initializing", False):
            del sys.modules[name]


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_imports_of_lost_threads)
