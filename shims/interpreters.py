"""Fresh interpreters that run the code they are given and nothing else.

``python -c`` puts the working directory first on ``sys.path``, so a
``json.py`` lying there would run in place of the standard library's.
``-I`` keeps it off but drops ``PYTHONPATH`` and the user's site-packages
too, where gpushim or the target may live, and ``-P`` needs Python 3.11:
the code given takes the entry off itself before anything else is imported.
"""

from __future__ import annotations

import sys

# The first entry is the working directory unless -P or PYTHONSAFEPATH (Python 3.11) kept it off.
_WITHOUT_THE_WORKING_DIRECTORY = "import sys\nif not getattr(sys.flags, 'safe_path', False): del sys.path[0]\n"


def python_command(code: str, *arguments: str) -> list[str]:
    """The command that runs ``code`` with ``arguments`` in a fresh interpreter of this Python, as ``python -c``."""
    return [sys.executable, "-c", _WITHOUT_THE_WORKING_DIRECTORY + code, *arguments]
