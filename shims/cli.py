"""The ``gpushim`` command (also ``python -m gpushim``): what gpushim does on this install.

Nothing here imports a target library: ``status``, ``patches`` and
``freeze`` read distribution metadata only, and ``selftest`` runs the
probes in child interpreters.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import textwrap

import gpushim

from .plugins import labelled
from .states import FAILED, NOT_INSTALLED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from .declaration import Patch
    from .states import Fields

DESCRIPTION = """\
Upstream bug fixes for old, pinned releases of CuPy, NVIDIA DALI and NVIDIA Warp,
applied at import time by `import gpushim.auto` or `gpushim-run COMMAND`.
This command reports what gpushim does on this install; it never imports a GPU library
(selftest runs the patches' probes in child interpreters)."""

EPILOG = """\
states: applied (patched in this process), pending (gpushim is active here and patches
the library when it is imported), inactive (would apply, but gpushim is not active in
this process), not-affected, not-backported (the release has the bug, and the patch does not
reach it: see reason), not-installed, opt-in (affected; on only where GPUSHIM_ENABLE
names it), disabled (GPUSHIM_DISABLE), failed (see reason).
Report a patch that fails or a `needed` selftest verdict with the output of `gpushim freeze`."""

_COLUMNS = ("id", "state", "distribution", "installed_version", "affected", "reason")


def format_table(records: Sequence[Fields], columns: tuple[str, ...] = _COLUMNS) -> str:
    """A plain-text table, one row per record; an id from another distribution says which."""
    records = [{**record, "id": labelled(record)} for record in records]
    rows = [columns] + [tuple(str(record[c] or "-") for c in columns) for record in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def upgrades(records: Sequence[Fields]) -> str:
    """Per installed release with patches in range, the lowest release that needs none (see :func:`freeze.upgrade`)."""
    from gpushim.freeze import NONE_KNOWN, freeze, needs_patches

    lines = [
        f"  {release['distribution']} {release['version']} -> {release['fixed_in'] or NONE_KNOWN}"
        for release in freeze(records)["releases"]
        if needs_patches(release)
    ]
    return "\n".join(["\nupgrades after which no patch is needed:", *lines]) if lines else ""


def upstream_fixes(records: Sequence[Fields]) -> str:
    """Per installed release, how many upstream fixes hit it and how many gpushim makes (``gpushim advisories``)."""
    from gpushim.advisories import counts, installed

    lines = [f"  {counts(release)}" for release in installed(records)]
    return "\n".join(["\nupstream's fixes (`gpushim advisories` lists them):", *lines]) if lines else ""


def _status(arguments: argparse.Namespace) -> int:
    records = gpushim.status()
    if arguments.json:
        print(json.dumps([record.as_dict() for record in records], indent=2))
    elif all(record["state"] == NOT_INSTALLED for record in records):
        libraries = sorted({record["target"] or labelled(record) for record in records})
        print(
            f"None of the libraries gpushim patches ({', '.join(libraries)}) is installed for {sys.executable}; "
            f"`gpushim patches` lists its {len(records)} patches."
        )
    else:
        print(format_table(records))
        for advice in (upstream_fixes(records), upgrades(records)):
            if advice:
                print(advice)
    failed = [record["id"] for record in records if record["state"] == FAILED]
    if arguments.check and failed:
        print(f"gpushim status --check: {len(failed)} failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _selftest(arguments: argparse.Namespace) -> int:
    from gpushim.probing import NoTemporaryFile
    from gpushim.selftest import NEEDED, PROBE_ERROR, selftest, summary

    def progress(line: str) -> None:
        print(f"gpushim selftest: {line}", file=sys.stderr, flush=True)

    try:
        results = selftest(progress)
    except NoTemporaryFile as error:
        progress(f"cannot run: {error}")
        return 3
    if arguments.json:
        print(json.dumps(results, indent=2))
    else:
        print(format_table(results, ("id", "distribution", "installed_version", "verdict", "without", "with")))
        print(f"\n{summary(results)}")
        advice = upstream_fixes(results)
        if advice:
            print(advice)
    return 1 if any(result["verdict"] in (NEEDED, PROBE_ERROR) for result in results) else 0


def patch_table(records: Sequence[Fields] | None = None) -> str:
    """docs/patches.md's Markdown table of patches, from their declarations."""
    rows = ["| id | library | affected | fixed in | upstream | what it fixes |", "|---|---|---|---|---|---|"]
    for record in gpushim.status() if records is None else records:
        patch = _declaration(record["id"])
        unreached = "".join(f"; not backported: `{spec}`" for spec in (patch.not_backported if patch else {}))
        opt_in = f"opt-in (`GPUSHIM_ENABLE={record['id']}`): " if patch is not None and patch.opt_in else ""
        rows.append(
            f"| `{labelled(record)}` | {record['target']} | `{record['affected']}`{unreached} "
            f"| {record['fixed_in'] or 'not yet'} | {record['upstream']} | {opt_in}{record['summary']} |"
        )
    return "\n".join(rows)


def _declaration(id: str) -> Patch | None:
    """Patch ``id``'s declaration; None for what another distribution declared but cannot be used (its row says so)."""
    try:
        return gpushim.registry()[id]
    except Exception:
        return None


def patch_list(records: Sequence[Fields], width: int) -> str:
    """The patches as a terminal table, what each fixes wrapped to ``width`` columns."""
    columns = ("id", "affected", "fixed in")
    rows = [columns] + [(labelled(record), record["affected"] or "-", record["fixed_in"] or "-") for record in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    indent = sum(widths) + 2 * len(widths)
    summaries = ["what it fixes"] + [
        f"{record['summary']} ({record['upstream']})" if record["target"] else f"failed: {record['reason']}"
        for record in records
    ]
    lines = []
    for row, summary in zip(rows, summaries):
        left = "".join(cell.ljust(w + 2) for cell, w in zip(row, widths))
        wrapped = textwrap.wrap(summary, max(width - indent, 30), break_on_hyphens=False) or [""]
        lines.append(left + wrapped[0])
        lines.extend(" " * indent + more for more in wrapped[1:])
    return "\n".join(lines)


_DECLARED = ("id", "target", "affected", "fixed_in", "upstream", "summary", "origin")


def _patches(arguments: argparse.Namespace) -> int:
    records = gpushim.status()
    if arguments.markdown:
        print(patch_table(records))
    elif arguments.json:
        print(json.dumps([{key: record[key] for key in _DECLARED} for record in records], indent=2))
    else:
        print(patch_list(records, shutil.get_terminal_size().columns))
    return 0


def _freeze(arguments: argparse.Namespace) -> int:
    from gpushim.freeze import format_freeze, freeze

    frozen = freeze()
    print(json.dumps(frozen, indent=2) if arguments.json else format_freeze(frozen))
    return 0


def _advisories(arguments: argparse.Namespace) -> int:
    from gpushim.advisories import CONSEQUENCES, LIBRARIES, installed, report

    found = installed(libraries=[arguments.library] if arguments.library else LIBRARIES)
    consequences = [arguments.consequence] if arguments.consequence else list(CONSEQUENCES)
    if arguments.json:
        for release in found:
            release["entries"] = [entry for entry in release["entries"] if entry["consequence"] in consequences]
        print(json.dumps(found, indent=2))
    else:
        print(report(found, consequences))
    return 0


def _bootstrap_path(arguments: argparse.Namespace) -> int:
    from gpushim.launcher import BOOTSTRAP

    print(BOOTSTRAP)
    return 0


def version() -> str:
    """What ``--version`` prints: gpushim's version, where it is installed, and the Python running it."""
    python = ".".join(map(str, sys.version_info[:3]))
    return f"gpushim {gpushim.__version__} from {os.path.dirname(gpushim.__file__)} (Python {python})"


def parser() -> argparse.ArgumentParser:
    from gpushim.advisories import CONSEQUENCES, LIBRARIES

    top = argparse.ArgumentParser(
        prog="gpushim", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    top.add_argument("--version", action="version", version=version())
    commands = top.add_subparsers(dest="command", title="commands", metavar="COMMAND")

    def command(name: str, summary: str, description: str, run, json_help: str | None = None):
        sub = commands.add_parser(name, help=summary, description=description)
        if json_help:
            sub.add_argument("--json", action="store_true", help=json_help)
        sub.set_defaults(run=run)
        return sub

    status = command(
        "status",
        "each patch and its state on this install",
        "Each patch with the installed release of its library and its state in this process, "
        "then, per installed release, how many of upstream's fixes hit it and how many gpushim makes "
        "(`gpushim advisories` lists them), and per installed release that needs patches, the lowest "
        "release outside every patch's range, if one is known. "
        "Reads distribution metadata only: a fresh process has gpushim inactive, so an affected "
        "release's patches read `inactive` here.",
        _status,
        "print the status records as JSON",
    )
    status.add_argument("--check", action="store_true", help="exit with status 1 if a patch is failed (for CI)")
    command(
        "selftest",
        "run each installed patch's probe without and with it",
        "Runs the probe (a minimal reproduction of the bug) of every patch whose library is installed, "
        "in fresh interpreters: without the patch (does this install have the bug?) and, where it "
        "does, with it (is the bug gone?). Verdicts: effective, not-needed, needed (please report). "
        "Exits with status 1 if a verdict is needed or a probe could not run, 3 if the self-test cannot "
        "run at all (no temporary file can be made).",
        _selftest,
        "print the results as JSON",
    )
    patches = command(
        "patches",
        "the patches gpushim has and the releases they apply to",
        "Every patch gpushim ships or another installed distribution adds (named after the id): its id, "
        "the affected releases, the first fixed release, the upstream issue and fix, and what it fixes.",
        _patches,
        "print the declarations as JSON",
    )
    patches.add_argument("--markdown", action="store_true", help="print the Markdown table of docs/patches.md")
    command(
        "freeze",
        "a requirements file of the installed libraries, with gpushim's patches in comments",
        "A requirements file that pip accepts: gpushim and each installed library release pinned, "
        "with the state of every patch for that release, and how many of upstream's fixes hit it, in "
        "comments. For experiment logs and bug "
        "reports; call gpushim.freeze.freeze() in the job itself to record what was applied there.",
        _freeze,
        "print JSON instead of a requirements file",
    )
    advisories = command(
        "advisories",
        "upstream's bug fixes that hit the installed releases, and what gpushim does about each",
        "Every bug fix upstream made after the installed release of each library gpushim knows, from the list "
        "gpushim ships: its consequence, the first release with the fix, whether a gpushim patch fixes it here, "
        "its patch does not reach this release, or none can (compiled code) or none exists yet; then the lowest "
        "release with upstream's fix of all that gpushim does not fix. Reads distribution metadata only.",
        _advisories,
        "print the releases and their entries as JSON",
    )
    advisories.add_argument("--library", choices=LIBRARIES, help="this library's releases only")
    advisories.add_argument(
        "--class", dest="consequence", choices=tuple(CONSEQUENCES), help="the fixes of this consequence only"
    )
    run = command(
        "run",
        "run a command with gpushim in every Python process it starts",
        "Runs COMMAND with gpushim active in it and in every Python process it starts (as gpushim-run).",
        None,
    )
    run.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments")
    command(
        "bootstrap-path",
        "the directory to put on PYTHONPATH with GPUSHIM_AUTO=1",
        "Prints the directory of gpushim's sitecustomize: first on PYTHONPATH, with GPUSHIM_AUTO=1, "
        "it activates gpushim in every Python process that inherits the environment.",
        _bootstrap_path,
    )
    return top


def exit_quietly_on_broken_pipe(run, *arguments) -> int:
    """``run(*arguments)``, ending quietly with status 1 when the reader of standard output has gone.

    ``gpushim status | head -1`` closes the pipe early; like other command
    line tools, gpushim then stops without a traceback.  Standard output is
    pointed at ``/dev/null`` so that the flush at exit cannot fail again.
    """
    try:
        code = run(*arguments)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["run"] and arguments[1:2] not in (["-h"], ["--help"]):  # the command as gpushim-run takes it
        from gpushim.launcher import main as run

        return run(arguments[1:])
    top = parser()
    arguments = top.parse_args(arguments)
    if arguments.command is None:
        return exit_quietly_on_broken_pipe(lambda: print(top.format_help(), end="") or 0)
    return exit_quietly_on_broken_pipe(arguments.run, arguments)


if __name__ == "__main__":
    sys.exit(main())
