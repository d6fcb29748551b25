"""The environment variables that steer gpushim.

They are read each time :func:`gpushim.patch` runs, never cached, so that a
launcher or a test can change them.  An invalid value, or a ``GPUSHIM_*``
name that is none of them, is reported with a :class:`GpushimWarning`, once
a process, with the nearest valid spelling, and otherwise ignored: a typo in
the kill switch during an incident must be seen, and must not make ``import
gpushim.auto`` fail, whatever the warning filters say.
"""

from __future__ import annotations

import os

from .report import shorten, warn

DISABLE = "GPUSHIM_DISABLE"
ENABLE = "GPUSHIM_ENABLE"
STRICT = "GPUSHIM_STRICT"
LOG = "GPUSHIM_LOG"
AUTO = "GPUSHIM_AUTO"
NAMES = (AUTO, DISABLE, ENABLE, LOG, STRICT)

_EVERYTHING = {"1", "all", "*"}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
_LOG_LEVELS = ("debug", "info", "warning")
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """Warn unless this process was told already: ``patch()`` and ``status()`` both read the switches."""
    if message not in _warned:
        _warned.add(message)
        warn(message)


def _nearest(word: str, choices) -> str | None:
    """The choice ``word`` most likely misspells, if any is close; difflib is loaded only for a typo."""
    try:
        from difflib import get_close_matches
    except ImportError:
        return None
    matches = get_close_matches(word, list(choices), n=1)
    return matches[0] if matches else None


def check_names() -> None:
    """Warn about each ``GPUSHIM_*`` variable that gpushim does not read, naming the switch it is nearest to."""
    prefix = "GPUSHIM_"
    for name in sorted(key for key in os.environ if key.startswith(prefix) and key not in NAMES):
        nearest = _nearest(name[len(prefix) :], [known[len(prefix) :] for known in NAMES])
        hint = f"did you mean {prefix}{nearest}?" if nearest else f"gpushim reads {', '.join(NAMES)}"
        _warn_once(f"{shorten(name)} is not a gpushim switch and is ignored; {hint}")


def disabled(ids: list[str]) -> set[str]:
    """The ids among ``ids`` that ``GPUSHIM_DISABLE`` turns off.

    It holds a comma-separated list of patch ids, library names (``warp``
    for ``warp.*``) or shell-style globs (``cupy.fuse_*``); ``1``, ``all``
    or ``*`` turn off every patch.
    """
    return _named(DISABLE, ids)


def enabled(ids: list[str]) -> set[str]:
    """The ids among ``ids`` that ``GPUSHIM_ENABLE`` turns on: an opt-in patch applies only if named there.

    Written as ``GPUSHIM_DISABLE`` is; naming a patch that is not opt-in
    changes nothing, and ``GPUSHIM_DISABLE`` wins over it.
    """
    return _named(ENABLE, ids)


def _named(variable: str, ids: list[str]) -> set[str]:
    """The ids among ``ids`` that the patterns of ``variable`` name; a pattern that names none is warned of."""
    value = os.environ.get(variable, "").strip()
    if value.lower() in _EVERYTHING:
        return set(ids)
    patterns = [pattern.strip() for pattern in value.split(",") if pattern.strip()]
    if not patterns:
        return set()
    try:
        from fnmatch import fnmatchcase
    except ImportError:  # sys.modules["fnmatch"] = None, say: ids and library names still match

        def fnmatchcase(name: str, pat: str) -> bool:
            return name == pat

    named = set()
    for pattern in patterns:
        matches = {id for id in ids if fnmatchcase(id, pattern) or id.startswith(f"{pattern}.")}
        if not matches:
            nearest = _nearest(pattern, sorted({*ids, *(id.split(".")[0] for id in ids)}))
            hint = f"did you mean {nearest!r}?" if nearest else "`gpushim patches` lists the ids"
            _warn_once(f"{variable}: {shorten(pattern)} matches no gpushim patch; {hint}")
        named |= matches
    return named


def _flag(name: str, when_invalid: str) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value not in _FALSE:
        _warn_once(f"{name}={shorten(value)} is none of 1, true, yes, on, 0, false, no, off; {when_invalid}")
    return False


def strict() -> bool:
    """Whether ``GPUSHIM_STRICT`` asks for failures to raise instead of warn."""
    return _flag(STRICT, "gpushim stays lenient")


def auto() -> bool:
    """Whether ``GPUSHIM_AUTO`` asks the bootstrap of ``gpushim-run`` to import ``gpushim.auto``."""
    return _flag(AUTO, "gpushim stays off")


def configure_logging() -> None:
    """Set the ``gpushim`` logger's level from ``GPUSHIM_LOG``, if it is set."""
    value = os.environ.get(LOG, "").strip().lower()
    if not value:
        return
    if value not in _LOG_LEVELS:
        _warn_once(f"{LOG}={shorten(value)} is not one of {', '.join(_LOG_LEVELS)}; ignored")
        return
    try:
        import logging
    except ImportError as missing:
        _warn_once(f"{LOG}={shorten(value)} is ignored: logging cannot be imported ({missing})")
        return
    from .report import logger

    gpushim = logger()
    gpushim.setLevel(value.upper())
    if not any(type(handler) is logging.StreamHandler for handler in gpushim.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("gpushim %(levelname)s: %(message)s"))
        gpushim.addHandler(handler)
