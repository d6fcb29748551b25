"""A reentrant lock that the child of ``os.fork()`` finds free.

A thread that holds a lock when another thread forks is not copied into
the child, so the child would wait forever for the lock: its next
``import cupy`` would hang.  The child gets a new lock instead, unless its
one thread, the one that forked, holds this one.  What the lost thread was
doing stays half done in the child, as it would without gpushim.
"""

from __future__ import annotations

import os

# _thread rather than threading: threading costs ~1 ms to import, and `import gpushim.auto` has a 5 ms budget.
from _thread import RLock
from _weakref import ref


class ForkSafeRLock:
    __slots__ = ("_lock", "__weakref__")

    def __init__(self) -> None:
        self._lock = RLock()
        if hasattr(os, "register_at_fork"):  # POSIX
            os.register_at_fork(after_in_child=_renewal(ref(self)))

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()


def _renewal(lock: ref):
    """What renews ``lock``, if it still exists, in a child that does not hold it; a weak reference, so that a lock
    lives no longer for being fork-safe."""

    def renew() -> None:
        held = lock()
        if held is not None and not held._lock._is_owned():
            held._lock = RLock()

    return renew
