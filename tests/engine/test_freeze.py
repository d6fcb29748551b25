"""``python -m gpushim freeze``: the target releases and the patches that apply to them."""

import json

import gpushim
from gpushim.freeze import format_freeze, freeze
from tests.engine.synthetic import Target, make_patch, registry_for, write_distribution
from tests.support import run_python


def release_of(frozen, distribution):
    return next(release for release in frozen["releases"] if release["distribution"] == distribution)


def test_a_patch_is_pending_until_its_target_is_imported_then_applied(target):
    registry = registry_for(make_patch(target))
    registry.patch()
    before = freeze(registry.status())
    target.import_()
    after = freeze(registry.status())
    assert release_of(before, "synthlib-cuda12")["patches"] == [{"id": "synth.compute", "state": "pending"}]
    assert release_of(after, "synthlib-cuda12")["patches"] == [{"id": "synth.compute", "state": "applied"}]


def test_a_release_is_listed_with_its_target_and_version(target):
    frozen = freeze(registry_for(make_patch(target)).status())
    assert frozen == {
        "gpushim": gpushim.__version__,
        "releases": [
            {
                "distribution": "synthlib-cuda12",
                "version": "1.5.0",
                "target": target.name,
                "patches": [{"id": "synth.compute", "state": "inactive"}],
            }
        ],
    }


def test_a_release_outside_the_affected_range_is_listed_without_patches(syspath):
    target = Target(syspath, version="2.3.0")
    assert release_of(freeze(registry_for(make_patch(target)).status()), "synthlib-cuda12")["patches"] == []


def test_a_disabled_patch_is_not_listed(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_DISABLE", "synth.compute")
    registry = registry_for(make_patch(target))
    registry.patch()
    assert release_of(freeze(registry.status()), "synthlib-cuda12")["patches"] == []


def test_targets_that_are_not_installed_are_left_out(target):
    registry = registry_for(make_patch(target, distributions=("not-installed-anywhere",)))
    assert freeze(registry.status())["releases"] == []


def test_the_text_says_what_pending_means_then_one_line_per_release(target):
    registry = registry_for(make_patch(target), make_patch(target, id="synth.other"))
    registry.patch()
    target.import_()
    assert format_freeze(freeze(registry.status())).splitlines() == [
        f"# gpushim=={gpushim.__version__}; applied: patched in this process; "
        "pending: patched once the library is imported with gpushim active",
        "synthlib-cuda12==1.5.0  synth.compute (applied), synth.other (applied)",
    ]


def test_a_release_without_patches_says_so_in_the_text(syspath):
    target = Target(syspath, version="2.3.0")
    lines = format_freeze(freeze(registry_for(make_patch(target)).status())).splitlines()
    assert lines[1:] == ["synthlib-cuda12==2.3.0  no patch applies"]


def test_the_command_reports_releases_as_installed_without_importing_them(tmp_path):
    """A fresh process imports no target: an affected release's patch is pending."""
    write_distribution(tmp_path, "warp-lang", "1.6.0")
    finished = run_python(
        "import sys; from gpushim.cli import main; main(['freeze', '--json']); assert 'warp' not in sys.modules",
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert finished.returncode == 0, finished.stderr
    warp = release_of(json.loads(finished.stdout), "warp-lang")
    assert warp == {
        "distribution": "warp-lang",
        "version": "1.6.0",
        "target": "warp",
        "patches": [{"id": "warp.cai_missing_strides", "state": "inactive"}],
    }
