"""gpushim in every Python process started below ``gpushim-run``.

At startup each interpreter imports the first ``sitecustomize`` module on its
path, and ``gpushim-run`` puts this directory first on ``PYTHONPATH``, which
child processes inherit.  This module imports ``gpushim.auto`` when
``GPUSHIM_AUTO`` says so, then steps aside for the ``sitecustomize`` it hides
(a site's or a virtual environment's own), which must run as if gpushim were
not there.  It imports nothing unless ``GPUSHIM_AUTO`` is set, and never
a GPU library.  It is read by every interpreter below ``gpushim-run``,
Python 2 among them, so it is written in what Python 2.7 reads too.
"""

import os
import sys


def _activate():
    if not os.environ.get("GPUSHIM_AUTO", "").strip():
        return
    try:
        from gpushim import switches
    except ImportError as missing:
        if getattr(missing, "name", "gpushim") != "gpushim":  # Python 2 names no module
            raise
        import warnings

        executable = sys.executable
        try:
            warnings.warn(
                "GPUSHIM_AUTO is set but " + executable + " has no gpushim installed; it runs without gpushim",
                stacklevel=2,
            )
        except Warning:  # the filters make it an error (PYTHONWARNINGS=error): dropped, as gpushim's own are
            pass
        return
    if switches.auto():
        import gpushim.auto  # noqa: F401


def _is_directory(entry, directory):
    try:
        return os.path.samestat(os.stat(entry or "."), directory)
    except OSError:
        return False


def _run_the_hidden_sitecustomize():
    """Import the next ``sitecustomize`` on the path, in this module's place.

    This directory leaves ``sys.path`` first, under every name it has there,
    so that the import below cannot find this module again.
    """
    here = os.stat(os.path.dirname(__file__))
    sys.path[:] = [entry for entry in sys.path if not _is_directory(entry, here)]
    this = sys.modules.pop(__name__)
    try:
        import sitecustomize  # noqa: F401  # pyright: ignore[reportMissingImports]  (the user's, if any)
    except ImportError as missing:
        if getattr(missing, "name", __name__) != __name__:
            raise
        sys.modules[__name__] = this


try:
    _activate()
finally:
    _run_the_hidden_sitecustomize()
