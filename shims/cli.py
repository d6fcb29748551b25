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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpushim", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    status = commands.add_parser("status", help="each patch and its state on this install")
    status.add_argument("--json", action="store_true", help="print JSON records instead of a table")
    status.set_defaults(run=_status)
    arguments = parser.parse_args(argv)
    return arguments.run(arguments)


if __name__ == "__main__":
    sys.exit(main())
