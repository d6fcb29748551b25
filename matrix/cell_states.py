"""Check, in one matrix cell, that every patch ends in the state derived for it.

Imports ``gpushim.auto`` and then each installed target (and the module a
patch that applies changes, where that is another: a release it does not
apply to may lack it, or warn on stdout importing it), as a user would,
and compares ``gpushim.status()`` with :func:`gpushim.expectations.expected_state`.
Prints the status records and where they were obtained, for ``compare``.
"""

from __future__ import annotations

import json
import platform
import sys

import gpushim
import gpushim.auto  # noqa: F401  (applies the patches as a user's import would)
from gpushim.device import cuda_present
from gpushim.engine import module_of
from gpushim.expectations import expected_state, installed_versions


def main() -> int:
    installed = installed_versions()
    expected = {id: expected_state(id, installed) for id in gpushim.registry().ids}
    for id, state in expected.items():
        if state != "not-installed":
            __import__(gpushim.registry().library(id).target)
        if state == "applied":
            __import__(module_of(gpushim.registry()[id]) or gpushim.registry().library(id).target)
    records = gpushim.status()
    environment = {"machine": platform.machine(), "python": platform.python_version(), "cuda_device": cuda_present()}
    print(json.dumps({"environment": environment, "records": [record.as_dict() for record in records]}, indent=1))
    wrong = [
        f"{r['id']}: expected {expected[r['id']]}, got {r['state']}" for r in records if r["state"] != expected[r["id"]]
    ]
    for line in wrong:
        print(line, file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
