"""``python -m gpushim``: what gpushim does on this install.

Nothing here imports a target library: ``status`` reads distribution
metadata only.
"""

from __future__ import annotations

import argparse
import json
import sys

import gpushim

_COLUMNS = ("id", "state", "distribution", "installed_version", "affected", "reason")


def format_table(records: list[dict], columns: tuple[str, ...] = _COLUMNS) -> str:
    """A plain-text table, one row per record."""
    rows = [columns] + [tuple(str(record[c] or "-") for c in columns) for record in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _status(arguments: argparse.Namespace) -> int:
    records = gpushim.status()
    if arguments.json:
        print(json.dumps(records, indent=2))
    else:
        print(format_table(records))
    return 0


def _selftest(arguments: argparse.Namespace) -> int:
    from gpushim.selftest import NEEDED, selftest

    results = selftest()
    if arguments.json:
        print(json.dumps(results, indent=2))
    else:
        print(format_table(results, ("id", "distribution", "installed_version", "verdict", "without")))
    return 1 if any(result["verdict"] == NEEDED for result in results) else 0


def patch_table() -> str:
    """The README's Markdown table of patches, from their declarations."""
    rows = ["| id | library | affected | fixed in | upstream | what it fixes |", "|---|---|---|---|---|---|"]
    registry = gpushim.registry()
    for patch in registry.patches:
        rows.append(
            f"| `{patch.id}` | {registry.library(patch.id).target} | `{patch.affected}` | {patch.fixed_in} "
            f"| {patch.upstream} | {patch.summary} |"
        )
    return "\n".join(rows)


def _patches(arguments: argparse.Namespace) -> int:
    print(patch_table())
    return 0


def _freeze(arguments: argparse.Namespace) -> int:
    from gpushim.freeze import format_freeze, freeze

    frozen = freeze()
    print(json.dumps(frozen, indent=2) if arguments.json else format_freeze(frozen))
    return 0


def _run(arguments: argparse.Namespace) -> int:
    from gpushim.launcher import run

    return run(arguments.command)


def _bootstrap_path(arguments: argparse.Namespace) -> int:
    from gpushim.launcher import BOOTSTRAP

    print(BOOTSTRAP)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpushim", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    status = commands.add_parser("status", help="each patch and its state on this install")
    status.add_argument("--json", action="store_true", help="print JSON records instead of a table")
    status.set_defaults(run=_status)
    selftest = commands.add_parser("selftest", help="run each installed patch's probe without and with it")
    selftest.add_argument("--json", action="store_true", help="print JSON records instead of a table")
    selftest.set_defaults(run=_selftest)
    patches = commands.add_parser("patches", help="the Markdown table of patches for the README")
    patches.set_defaults(run=_patches)
    freeze = commands.add_parser("freeze", help="installed target releases and the patches that apply to them")
    freeze.add_argument("--json", action="store_true", help="print JSON instead of requirement-style lines")
    freeze.set_defaults(run=_freeze)
    run = commands.add_parser("run", help="run a command with gpushim in every Python process it starts")
    run.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments")
    run.set_defaults(run=_run)
    bootstrap = commands.add_parser("bootstrap-path", help="the directory to put on PYTHONPATH with GPUSHIM_AUTO=1")
    bootstrap.set_defaults(run=_bootstrap_path)
    arguments = parser.parse_args(argv)
    return arguments.run(arguments)


if __name__ == "__main__":
    sys.exit(main())
