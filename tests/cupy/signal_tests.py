"""What the tests of the ``cupyx.scipy.signal`` patches share: the module, or the test module skipped without it."""

from __future__ import annotations


def signal_or_skip():
    """``cupyx.scipy.signal``; where it cannot be imported here, the calling test module is skipped, saying why."""
    import pytest

    from gpushim import ProbeCannotRun
    from gpushim.patches.cupy._on_numpy import import_signal

    try:
        return import_signal()
    except ProbeCannotRun as error:
        pytest.skip(str(error), allow_module_level=True)
