"""``python -m gpushim freeze``: which releases gpushim patches here, for experiment logs.

A result is only reproducible with the library releases and the fixes that
were in effect, so this lists each installed target's distribution and
version with the ids of the patches that apply to it.  A patch is
``applied`` in the process that asks (call :func:`freeze` from the training
script after its imports to log that), or ``pending``: it applies as soon
as the library is imported with gpushim active, which is all a fresh
``python -m gpushim freeze`` can say, since it imports no GPU library.
"""

from __future__ import annotations

import gpushim

from .states import APPLIED, INACTIVE, PENDING


def freeze(records: list[dict[str, str | None]] | None = None) -> dict:
    """gpushim's version and, per installed target release, its applied or pending patches.

    ``records`` are status records, those of :func:`gpushim.status` by default.
    """
    releases: dict[tuple[str, str], dict] = {}
    for record in gpushim.status() if records is None else records:
        if record["distribution"] is None:
            continue
        release = releases.setdefault(
            (record["distribution"], record["installed_version"]),
            {
                "distribution": record["distribution"],
                "version": record["installed_version"],
                "target": record["target"],
                "patches": [],
            },
        )
        if record["state"] in (APPLIED, PENDING, INACTIVE):
            release["patches"].append({"id": record["id"], "state": record["state"]})
    return {"gpushim": gpushim.__version__, "releases": list(releases.values())}


def format_freeze(frozen: dict) -> str:
    """One ``distribution==version`` line per release, with its patches and their states."""
    lines = [
        f"# gpushim=={frozen['gpushim']}; applied: patched in this process; "
        "pending: patched once the library is imported with gpushim active"
    ]
    for release in frozen["releases"]:
        patches = ", ".join(f"{patch['id']} ({patch['state']})" for patch in release["patches"])
        lines.append(f"{release['distribution']}=={release['version']}  {patches or 'no patch applies'}")
    return "\n".join(lines)
