"""What the tests of the ``cupyx.scipy`` patches share: the module, or the test module skipped without it."""

from __future__ import annotations


def signal_or_skip():
    """``cupyx.scipy.signal``; where it cannot be imported here, the calling test module is skipped, saying why."""
    return cupyx_or_skip("cupyx.scipy.signal")


def cupyx_or_skip(name):
    """The module ``name`` of ``cupyx.scipy``; where it cannot be imported here, the calling test module is skipped."""
    import pytest

    from gpushim import ProbeCannotRun
    from gpushim.patches.cupy._on_numpy import import_cupyx

    try:
        return import_cupyx(name)
    except ProbeCannotRun as error:
        pytest.skip(str(error), allow_module_level=True)
