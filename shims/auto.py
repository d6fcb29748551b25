"""``import gpushim.auto`` applies every gpushim patch this install needs.

Nothing here may fail the user's import: a broken catalogue or engine is
reported and gpushim stays off, unless ``GPUSHIM_STRICT=1`` asks to raise.
"""

import gpushim

try:
    gpushim.patch()
except Exception as error:
    from gpushim import report, switches

    if switches.strict():
        raise
    report.warn(f"gpushim is off in this process: {type(error).__name__}: {error}")
