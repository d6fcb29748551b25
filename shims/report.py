"""How gpushim tells the user what happened, without ever breaking their program.

A warning points at the user's own line (the ``import cupy`` that triggered a
patch, say), not at gpushim or the import machinery; one raised while the
interpreter starts (``gpushim-run``'s bootstrap) has no such line and points
at gpushim.  When the warning
filters turn it into an exception (``python -W error``, pytest's
``filterwarnings = error``) it is dropped: the failure is still in
``gpushim.status()`` and in the log, and only ``GPUSHIM_STRICT=1`` may make
gpushim raise.  Messages go to the ``gpushim`` logger only once the program
has imported :mod:`logging` (nothing can listen before that, and importing
it would cost the target's import); the logger has a ``NullHandler`` so that
an unconfigured program sees each failure once, as a warning, rather than
again through logging's last-resort handler.
"""

from __future__ import annotations

import os
import sys

from .errors import GpushimWarning

_HERE = os.path.dirname(os.path.abspath(__file__))
_LONGEST_VALUE = 200


def _is_internal(filename: str) -> bool:
    """gpushim's own frames, the import system's, and the interpreter's startup (``site`` running the bootstrap)."""
    if filename.startswith((_HERE, "<frozen importlib", "<frozen site>")) or "importlib" + os.sep in filename:
        return True
    return os.path.basename(filename) == "site.py" and os.path.dirname(filename) == os.path.dirname(os.__file__)


def _stacklevel() -> int | None:
    """The ``stacklevel`` of the first frame outside gpushim and importlib, for :func:`warnings.warn`; None if none.

    :func:`warnings.warn` itself passes over importlib's ``_bootstrap`` frames
    without counting them, so they are not counted here either.
    """
    frame, level = sys._getframe(2), 2
    while frame is not None and _is_internal(frame.f_code.co_filename):
        filename = frame.f_code.co_filename
        frame = frame.f_back
        level += not ("importlib" in filename and "_bootstrap" in filename)
    return level if frame is not None else None


def warn(message: str) -> None:
    """Warn with :class:`GpushimWarning` at the user's line; never raise, even when ``warnings`` cannot be imported.

    Without a line of the user's the warning is gpushim's own: ``gpushim:0: GpushimWarning: ...``.
    """
    try:
        import warnings

        level = _stacklevel()
        if level is None:
            warnings.warn_explicit(message, GpushimWarning, "gpushim", 0, module="gpushim")
        else:
            warnings.warn(message, GpushimWarning, stacklevel=level)
    except Exception:
        pass


def logger():
    import logging

    gpushim = logging.getLogger("gpushim")
    if not gpushim.handlers:
        gpushim.addHandler(logging.NullHandler())
    return gpushim


def log(level: str, message: str) -> None:
    """``message`` to the ``gpushim`` logger, if anything can be listening to it."""
    if "logging" not in sys.modules:
        return
    try:
        getattr(logger(), level)(message)
    except Exception:
        pass


def shorten(value: str) -> str:
    """``value`` as a message quotes it: a switch can hold kilobytes."""
    if len(value) <= _LONGEST_VALUE:
        return repr(value)
    return f"{value[:_LONGEST_VALUE]!r}... ({len(value)} characters)"
