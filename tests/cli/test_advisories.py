"""``gpushim advisories``, and the line per release that ``status`` and ``freeze`` give of it.

The releases are installed as metadata only (Warp 1.6.0 and CuPy 13.3.0 in
``pinned``), which is all the list needs: what each patch does to them comes
from ``gpushim status``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpushim.advisories import counts, load
from gpushim.releases import is_affected
from tests.cli.scripts import RELEASES, command, environment, status, write_distribution


def advisories(env, *arguments) -> list[dict]:
    finished = command("gpushim", "advisories", "--json", *arguments, env=env)
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout)


@pytest.fixture(scope="module")
def pinned(tmp_path_factory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("site")
    for distribution, version in RELEASES.items():
        write_distribution(site, distribution, version)
    return environment(PYTHONPATH=str(site))


@pytest.fixture(scope="module")
def found(pinned) -> list[dict]:
    """What ``gpushim advisories --json`` prints for ``pinned``."""
    return advisories(pinned)


def one_release(tmp_path, distribution: str, version: str) -> dict[str, str]:
    write_distribution(tmp_path, distribution, version)
    return environment(PYTHONPATH=str(tmp_path))


def latest(versions) -> str:
    return max(versions, key=lambda version: tuple(map(int, version.split("."))))


def test_every_listed_fix_that_hits_an_installed_release_is_shown_for_it(found):
    assert [(release["distribution"], release["version"]) for release in found] == sorted(RELEASES.items())
    for release in found:
        listed = [
            entry for entry in load(release["library"])["entries"] if is_affected(release["version"], entry["affected"])
        ]
        assert [{k: v for k, v in entry.items() if k != "here"} for entry in release["entries"]] == listed


def test_an_entry_is_fixed_where_its_patch_applies_to_the_release(pinned, found):
    records = {record["id"]: record for record in status(pinned)}
    for release in found:
        for entry in release["entries"]:
            state = records.get(entry["reach"], {}).get("state")
            assert (entry["here"] == "fixed") == (state == "inactive"), entry


def test_an_entry_whose_patch_does_not_reach_the_release_is_not_backported(tmp_path):
    """``warp.component_write_adjoint`` backports its fix to 1.6.0 and later only; the bug is older."""
    (release,) = advisories(one_release(tmp_path, "warp-lang", "1.5.0"))
    (entry,) = [entry for entry in release["entries"] if entry["reach"] == "warp.component_write_adjoint"]
    assert entry["here"] == "not-backported"


def test_an_entry_whose_patch_finds_the_environment_does_not_trigger_it_says_so(found):
    """``cupy.fuse_python_scalar`` concerns CuPy 13.3.0 under NumPy 2, which is not installed here."""
    cupy = next(release for release in found if release["library"] == "cupy")
    (entry,) = [entry for entry in cupy["entries"] if entry["reach"] == "cupy.fuse_python_scalar"]
    assert entry["here"] == "untriggered"


def test_the_lowest_release_with_upstreams_fix_of_all_that_gpushim_leaves(found):
    for release in found:
        left = [entry["fixed_in"] for entry in release["entries"] if entry["here"] not in ("fixed", "untriggered")]
        assert release["lowest_fix"] == latest(left)


def test_a_library_and_a_class_narrow_the_list(pinned):
    (release,) = advisories(pinned, "--library", "warp", "--class", "wrong-result")
    assert release["library"] == "warp" and release["entries"]
    assert {entry["consequence"] for entry in release["entries"]} == {"wrong-result"}


def test_the_report_counts_each_release_then_groups_by_consequence_and_what_gpushim_does(pinned, found):
    printed = command("gpushim", "advisories", "--library", "warp", env=pinned).stdout
    (release,) = [release for release in found if release["library"] == "warp"]
    hit, fixed = len(release["entries"]), sum(entry["here"] == "fixed" for entry in release["entries"])
    lines = printed.splitlines()
    assert lines[0].startswith(f"warp-lang 1.6.0: {hit} upstream fixes hit this release, {fixed} fixed by gpushim, ")
    assert lines[1] == f"  upstream fixes the rest from warp-lang {release['lowest_fix']} on"
    assert "\n  silent wrong result: " in printed and "\n    fixed by gpushim: " in printed


def test_a_release_the_list_does_not_cover_completely_says_so(tmp_path):
    printed = command("gpushim", "advisories", env=one_release(tmp_path, "nvidia-dali-cuda120", "1.32.0")).stdout
    assert "(the list is not complete for it)" in printed.splitlines()[0]
    assert "\n  not every fix that hits this release is listed: the list reads DALI's release notes" in printed


def test_without_a_listed_library_installed_it_says_so(tmp_path):
    printed = command("gpushim", "advisories", env=environment(PYTHONPATH=str(tmp_path))).stdout
    assert printed == "no release of a library with a list of upstream fixes is installed\n"


def test_status_and_freeze_give_a_line_per_release(pinned, found):
    printed = command("gpushim", "status", env=pinned).stdout
    block = printed.split("\n\nupstream's fixes (`gpushim advisories` lists them):\n")[1]
    lines = block.split("\n\n")[0].splitlines()
    assert [line.split(":")[0] for line in lines] == [f"  {d} {v}" for d, v in sorted(RELEASES.items())]
    frozen = command("gpushim", "freeze", env=pinned).stdout
    for release in found:
        fixed = sum(entry["here"] == "fixed" for entry in release["entries"])
        said = f"#   {len(release['entries'])} upstream fixes hit this release, {fixed} fixed by gpushim "
        assert said + "(`gpushim advisories` lists them)" in frozen.splitlines()


def test_selftest_ends_with_a_line_per_release(tmp_path):
    """DALI 1.32.0 as metadata alone: its probes cannot import it, and the count comes all the same."""
    env = one_release(tmp_path, "nvidia-dali-cuda120", "1.32.0")
    (release,) = advisories(env)
    printed = command("gpushim", "selftest", env=env).stdout.splitlines()
    assert printed[-2:] == ["upstream's fixes (`gpushim advisories` lists them):", f"  {counts(release)}"]


def test_neither_gpushim_auto_nor_status_reads_the_list(pinned):
    code = "import sys, gpushim.auto, gpushim; gpushim.status(); print([m for m in sys.modules if 'advisories' in m])"
    finished = subprocess.run([sys.executable, "-c", code], env=pinned, capture_output=True, text=True, timeout=300)
    assert finished.stdout.splitlines()[-1] == "[]", finished.stderr
