"""Check, in one matrix cell, that every patch ends in the state the cell expects.

Imports ``gpushim.auto`` and then each installed target, as a user would,
and compares ``gpushim.status()`` with ``--applied`` and ``--not-affected``.
"""

from __future__ import annotations

import argparse
import json
import sys

import gpushim
import gpushim.auto  # noqa: F401  (applies the patches as a user's import would)


def _ids(text: str) -> set[str]:
    return {id for id in text.split(",") if id}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--applied", type=_ids, default=set())
    parser.add_argument("--not-affected", type=_ids, default=set())
    expected = parser.parse_args()
    records = gpushim.status()
    for target in {record["target"] for record in records if record["state"] == "pending"}:
        __import__(target)
    records = gpushim.status()
    print(json.dumps(records, indent=1))
    states = {record["id"]: record["state"] for record in records}
    wrong = [
        f"{id}: expected {state}, got {states[id]}"
        for state, ids in (("applied", expected.applied), ("not-affected", expected.not_affected))
        for id in sorted(ids)
        if states[id] != state
    ]
    for line in wrong:
        print(line, file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
