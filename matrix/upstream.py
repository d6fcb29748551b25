"""Upstream's history read from a git mirror, to keep gpushim's list of upstream fixes (shims/advisories/) current.

``python -m matrix.upstream list LIBRARY MIRROR AFTER UPTO`` prints what each
release after AFTER up to UPTO changed, one line each, marked ``listed`` where
an entry of the list names its reference: for Warp every bullet of
CHANGELOG.md under a release's *Fixed* heading, nested ones on lines of their
own (every bullet of the early releases, whose notes have no headings); for CuPy and DALI every commit on the
first-parent line between consecutive release tags (CuPy's merges name their
pull request, DALI's squashed commits end with theirs).  What is a bug fix, and
whom it hits, is for the reader to judge: the next release's entries are found
the same way as the list's were.

``python -m matrix.upstream check LIBRARY MIRROR`` prints, for each entry of
the list that names a commit (``NVIDIA/warp@<hash>``) or a pull request merged
on the release line (``cupy/cupy#N (v13: #M)``: M), the first release tag
that contains it, or a commit of the same subject (the fix picked onto a
release branch), beside the entry's ``fixed_in``.

A mirror is a clone of github.com/NVIDIA/warp, cupy/cupy or NVIDIA/DALI.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

LIST = Path(__file__).parents[1] / "shims" / "advisories"
REFERENCE = re.compile(r"GH-\d+|#\d+|@[0-9a-f]{7,40}")


def git(mirror: str, *arguments: str) -> str:
    return subprocess.run(["git", "-C", mirror, *arguments], capture_output=True, text=True, check=True).stdout


def release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def changelog_fixes(mirror: str, after: str, upto: str) -> list[tuple[str, str]]:
    """``(release, bullet)`` for each fix of Warp's CHANGELOG.md in the releases after ``after`` up to ``upto``."""
    found = []
    for section in re.split(r"^## ", git(mirror, "show", "HEAD:CHANGELOG.md"), flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        version = heading.strip("[").partition("]")[0]
        if not re.fullmatch(r"\d+\.\d+\.\d+", version) or not release(after) < release(version) <= release(upto):
            continue
        headed = re.split(r"^### ", body, flags=re.M)
        fixed = (
            [part.partition("\n")[2] for part in headed[1:] if part.startswith("Fixed")] if len(headed) > 1 else [body]
        )
        for part in fixed:
            for bullet in re.split(r"^\s*- ", part, flags=re.M)[1:]:
                found.append((version, " ".join(bullet.split())))
    return found


def release_line_commits(mirror: str, after: str, upto: str) -> list[tuple[str, str]]:
    """``(release, subject)`` of each first-parent commit between the release tags from ``after`` to ``upto``."""
    tags = sorted(
        (tag for tag in git(mirror, "tag", "--list", "v*").split() if re.fullmatch(r"v\d+\.\d+\.\d+", tag)), key=release
    )
    chosen = [tag for tag in tags if release(after) <= release(tag) <= release(upto)]
    found = []
    for previous, tag in zip(chosen, chosen[1:]):
        for line in git(mirror, "log", "--first-parent", "--format=%s%x09%b", f"{previous}..{tag}").splitlines():
            subject, _, body = line.partition("\t")
            if subject:
                found.append((tag[1:], f"{subject} {body.strip()}".strip()))
    return found


def listed_references(library: str) -> set[str]:
    entries = json.loads((LIST / f"{library}.json").read_text())["entries"]
    return {reference for entry in entries for reference in REFERENCE.findall(entry["upstream"])}


def list_releases(library: str, mirror: str, after: str, upto: str) -> None:
    read = changelog_fixes if library == "warp" else release_line_commits
    known = listed_references(library)
    for version, text in read(mirror, after, upto):
        listed = any(reference in known for reference in REFERENCE.findall(text.replace("(GH-", "GH-")))
        print(f"{version:<8} {'listed' if listed else 'new':<7} {text}")


def fix_of(upstream: str) -> str | None:
    """What marks the fix in the mirror: a commit's hash, else the pull request merged on the release line."""
    commit = re.search(r"@([0-9a-f]{7,40})", upstream)
    if commit:
        return commit.group(1)
    pull = re.search(r"\(v\d+[.\d]*: #(\d+)", upstream) or re.search(r"#(\d+)", upstream)
    return f"#{pull.group(1)}" if pull else None


def first_tag(mirror: str, fix: str) -> str | None:
    """The first release tag holding commit ``fix`` or a copy of it, or a merge of pull request ``fix`` (``#N``).

    A copy is a commit with the same subject: a fix picked onto a release
    branch.  GitHub's merge queue leaves more than one merge commit of a pull
    request: the earliest tag of any counts.
    """
    if fix.startswith("#"):
        commits = git(mirror, "log", "--all", "--format=%H", f"--grep=^Merge pull request {fix} ").split()
    else:
        subject = git(mirror, "log", "-1", "--format=%s", fix).strip()
        found = git(mirror, "log", "--all", "--format=%H%x09%s", "--fixed-strings", f"--grep={subject}").splitlines()
        commits = [fix] + [line.partition("\t")[0] for line in found if line.partition("\t")[2] == subject]
    tags = [
        tag
        for commit in commits
        for tag in git(mirror, "tag", "--contains", commit).split()
        if re.fullmatch(r"v\d+\.\d+\.\d+", tag)
    ]
    return min(tags, key=release)[1:] if tags else None


def check(library: str, mirror: str) -> None:
    for entry in json.loads((LIST / f"{library}.json").read_text())["entries"]:
        fix = fix_of(entry["upstream"])
        if fix is None:
            continue
        tag = first_tag(mirror, fix)
        verdict = "same" if tag == entry["fixed_in"] else "differs"
        print(f"{entry['fixed_in'] or '-':<8} {tag or '-':<8} {verdict:<8} {fix} {entry['what']}")


def main() -> None:
    top = argparse.ArgumentParser(prog="python -m matrix.upstream", description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="what each release of a range changed, marked where the list has it")
    checking = commands.add_parser("check", help="the first release tag with each entry's fix, beside its fixed_in")
    for sub in (listing, checking):
        sub.add_argument("library", choices=("cupy", "dali", "warp"))
        sub.add_argument("mirror", help="a git clone of the library's upstream repository")
    listing.add_argument("after", help="the last release already read, e.g. 1.16.0")
    listing.add_argument("upto", help="the last release to read")
    arguments = top.parse_args()
    if arguments.command == "list":
        list_releases(arguments.library, arguments.mirror, arguments.after, arguments.upto)
    else:
        check(arguments.library, arguments.mirror)


if __name__ == "__main__":
    main()
