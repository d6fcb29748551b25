"""``gpushim-run COMMAND ...``: gpushim in a command and in every Python process it starts.

A training job's patches must reach processes nobody can add an import to:
DataLoader workers started with spawn, torchrun ranks, Ray workers, scripts
that a shell script runs.  What they all inherit is the environment, so the
launcher puts gpushim's bootstrap directory first on ``PYTHONPATH`` (its
``sitecustomize`` runs in every interpreter at startup), sets
``GPUSHIM_AUTO=1`` for it, and then becomes the command: ``exec`` keeps the
process id, the signals and the exit status the command's own.  The other
``GPUSHIM_*`` switches travel in the same environment.

``gpushim-run`` itself is a shell script (``shims/bin/gpushim-run``) that
starts :func:`main` in an interpreter without its site, so that the user's
``sitecustomize`` and ``.pth`` files run once in the process, in the
command, as without gpushim.  ``gpushim run`` runs :func:`main` in the
interpreter that runs ``gpushim``.
"""

from __future__ import annotations

import os
import sys

from . import switches

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap")
USAGE = "usage: gpushim-run [--version] [--] COMMAND [ARGUMENT ...]"
PURPOSE = """\
Run COMMAND with gpushim active in it and in every Python process it starts.

gpushim-run puts gpushim's bootstrap directory first on PYTHONPATH, sets GPUSHIM_AUTO=1
and then becomes COMMAND (same process id, signals and exit status). The GPUSHIM_*
switches set before it reach every process below it. Put -- before a COMMAND that
starts with a dash."""


def environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with the bootstrap directory first on ``PYTHONPATH``, once, and ``GPUSHIM_AUTO=1``."""
    path = base.get("PYTHONPATH")
    others = [entry for entry in path.split(os.pathsep) if entry != BOOTSTRAP] if path else []
    return {**base, "PYTHONPATH": os.pathsep.join([BOOTSTRAP, *others]), switches.AUTO: "1"}


def run(command: list[str]) -> int:
    """Replace this process with ``command``; returns only when it cannot be started, as a shell would."""
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print(USAGE, file=sys.stderr)
        return 2
    if not command[0]:
        print("gpushim-run: the command is an empty string", file=sys.stderr)
        return 127
    try:
        os.execvpe(command[0], command, environment(os.environ))
    except OSError as error:
        print(f"gpushim-run: {command[0]}: {error.strerror}", file=sys.stderr)
        return 127 if isinstance(error, FileNotFoundError) else 126


def main(argv: list[str] | None = None) -> int:
    """``gpushim-run``: its own options come first, anything after them is the command."""
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] in (["-h"], ["--help"]):
        print(f"{USAGE}\n\n{PURPOSE}")
        return 0
    if arguments[:1] == ["--version"]:
        from .cli import version

        print(version().replace("gpushim", "gpushim-run", 1))
        return 0
    return run(arguments)
