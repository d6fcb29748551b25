"""``gpushim freeze``: a requirements file that pip accepts, with the patches' states in comments."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gpushim
from gpushim.freeze import NONE_KNOWN, format_freeze, freeze, requirement
from tests.cli.scripts import RELEASES, command, environment, status, write_distribution


def record(id, state, distribution="synthlib-cuda12", version="1.5.0", fixed_in="2.0", affected="<2.0"):
    return {
        "id": id,
        "target": "synthlib",
        "distribution": distribution,
        "installed_version": version,
        "affected": affected,
        "fixed_in": fixed_in,
        "state": state,
        "reason": "",
    }


def pip_dry_run(requirements, env):
    """``pip install --dry-run --no-index -r``: resolves from what is installed alone."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    return subprocess.run(
        [*pip, "install", "--dry-run", "--no-index", "-r", requirements],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def from_an_index(installed) -> dict[str, str]:
    """``installed``, with gpushim's metadata first on the path as pip writes it for a release from an index."""
    write_distribution(Path(installed["PYTHONPATH"]), "gpushim", gpushim.__version__)
    return installed


def with_direct_url(installed, direct_url: dict) -> dict[str, str]:
    """``installed``, with gpushim's metadata first on the path as pip writes it for an install from a URL."""
    site = Path(installed["PYTHONPATH"])
    write_distribution(site, "gpushim", gpushim.__version__)
    (site / f"gpushim-{gpushim.__version__}.dist-info" / "direct_url.json").write_text(json.dumps(direct_url))
    return installed


COMMIT = "daa0556" + "0" * 33


@pytest.mark.parametrize(
    "direct_url, pinned",
    [
        (
            {"url": "https://github.com/gpushim/gpushim", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
            f"gpushim @ git+https://github.com/gpushim/gpushim@{COMMIT}",
        ),
        (
            {"url": "file:///wheels/gpushim-0.3.0-py3-none-any.whl", "archive_info": {}},
            "gpushim @ file:///wheels/gpushim-0.3.0-py3-none-any.whl",
        ),
        ({"url": "file:///src/gpushim", "dir_info": {"editable": True}}, "-e file:///src/gpushim"),
    ],
    ids=["commit", "file", "editable"],
)
def test_gpushim_is_pinned_as_it_was_installed(installed, direct_url, pinned):
    """Not ``gpushim==VERSION``, which no index has for a commit of the repository."""
    lines = command("gpushim", "freeze", env=with_direct_url(installed, direct_url)).stdout.splitlines()
    assert [line for line in lines if not line.startswith("#")][0] == pinned


@pytest.mark.parametrize(
    "direct_url",
    [
        {"url": "file:///src/gpushim", "dir_info": None},
        {"url": "https://github.com/gpushim/gpushim", "vcs_info": {"vcs": "git"}},
        {"url": "https://github.com/gpushim/gpushim", "vcs_info": "git"},
        {"url": "file:///wheels/gpushim.whl\n--extra-index-url https://example.invalid/simple", "archive_info": {}},
        {"url": "https://github.com/gpushim/gpushim", "vcs_info": {"vcs": "git", "commit_id": "0\n-e file:///x"}},
        ["file:///src/gpushim"],
    ],
    ids=["dir_info null", "no commit_id", "vcs_info not an object", "newline in url", "newline in commit", "a list"],
)
def test_a_malformed_direct_url_json_pins_the_version(installed, direct_url):
    """Only what was checked is written: a line break would give pip an option of its own."""
    finished = command("gpushim", "freeze", env=with_direct_url(installed, direct_url))
    assert "Traceback" not in finished.stderr
    assert [line for line in finished.stdout.splitlines() if not line.startswith("#")][0] == (
        f"gpushim=={gpushim.__version__}"
    )
    assert not [line for line in finished.stdout.splitlines() if line.startswith("-")]


ROOT = Path(__file__).parents[2]
PACKAGED = ("pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE", "shims", "patches")  # what the sdist holds


def git(*arguments, cwd: Path) -> str:
    identity = ["-c", "user.name=gpushim tests", "-c", "user.email=tests@gpushim.invalid"]
    finished = subprocess.run(["git", *identity, *arguments], cwd=cwd, capture_output=True, text=True, check=True)
    return finished.stdout.strip()


def uv_venv(folder: Path, *requirements) -> Path:
    """A virtual environment at ``folder`` with ``requirements`` (``pip install`` arguments) installed; its bin."""
    uv = shutil.which("uv") or "uv"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, folder], check=True)
    install = [uv, "pip", "install", "--quiet", "--python", folder / "bin" / "python", *requirements]
    subprocess.run(install, check=True, timeout=600)
    return folder / "bin"


def test_a_freeze_of_gpushim_installed_from_a_commit_installs_that_commit_again(tmp_path):
    """A team pins a commit of the repository: here one of a repository made of this tree's package."""
    repository = tmp_path / "repository"
    repository.mkdir()
    for name in PACKAGED:
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, repository / name)
    git("init", "--quiet", cwd=repository)
    git("add", ".", cwd=repository)
    git("commit", "--quiet", "-m", "gpushim", cwd=repository)
    pinned = f"gpushim @ git+{repository.as_uri()}@{git('rev-parse', 'HEAD', cwd=repository)}"
    frozen = subprocess.run(
        [uv_venv(tmp_path / "first", pinned) / "gpushim", "freeze"], capture_output=True, text=True, env=environment()
    ).stdout
    assert pinned in frozen.splitlines()
    (tmp_path / "requirements.txt").write_text(frozen)
    again = uv_venv(tmp_path / "again", "-r", tmp_path / "requirements.txt")
    finished = subprocess.run([again / "gpushim", "freeze"], capture_output=True, text=True, env=environment())
    assert pinned in finished.stdout.splitlines()


def test_the_url_of_another_install_of_gpushim_is_not_pinned(installed):
    """An older gpushim first on the path, installed from a commit: its URL would pin the wrong one."""
    site = Path(installed["PYTHONPATH"])
    write_distribution(site, "gpushim", "0.0.1")
    direct_url = {"url": "https://github.com/gpushim/gpushim", "vcs_info": {"vcs": "git", "commit_id": COMMIT}}
    (site / "gpushim-0.0.1.dist-info" / "direct_url.json").write_text(json.dumps(direct_url))
    frozen = command("gpushim", "freeze", env=installed).stdout
    assert COMMIT not in frozen
    assert [line for line in frozen.splitlines() if not line.startswith("#")][0].startswith("gpushim")


def test_pip_installs_from_the_file_what_is_installed(from_an_index, tmp_path):
    installed = from_an_index
    requirements = tmp_path / "requirements.txt"
    finished = command("gpushim", "freeze", env=installed)
    assert finished.returncode == 0, finished.stderr
    requirements.write_text(finished.stdout)
    resolved = pip_dry_run(requirements, installed)
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    pinned = [f"gpushim=={gpushim.__version__}", *(f"{name}=={version}" for name, version in RELEASES.items())]
    for line in pinned:
        assert f"Requirement already satisfied: {line} " in resolved.stdout
    assert "Would install" not in resolved.stdout


def test_pip_refuses_the_file_when_a_pinned_release_is_not_installed(from_an_index, tmp_path):
    """What makes the test above mean something: pip does check the pins."""
    installed = from_an_index
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(command("gpushim", "freeze", env=installed).stdout.replace("==1.6.0", "==1.6.1"))
    resolved = pip_dry_run(requirements, installed)
    assert resolved.returncode != 0
    assert "warp-lang==1.6.1" in resolved.stderr


def test_each_release_is_pinned_with_the_state_of_its_patches_below_it(from_an_index):
    installed = from_an_index
    records = status(installed)
    lines = command("gpushim", "freeze", env=installed).stdout.splitlines()
    requirements = [line for line in lines if not line.startswith("#")]
    assert requirements == [f"gpushim=={gpushim.__version__}", *(f"{name}=={v}" for name, v in RELEASES.items())]
    for distribution, version in RELEASES.items():
        below = lines[lines.index(f"{distribution}=={version}") + 1 :]
        comments = below[: next((i for i, line in enumerate(below) if not line.startswith("#")), len(below))]
        states = [
            f"#   {r['id']}: {r['state']}"
            for r in records
            if r["distribution"] == distribution and r["state"] not in ("not-affected", "not-installed")
        ]
        assert states and comments[: len(states)] == states


def test_the_command_imports_no_library(installed):
    code = "import sys; from gpushim.cli import main; main(['freeze']); print({'cupy', 'warp'} & set(sys.modules))"
    finished = subprocess.run([sys.executable, "-c", code], env=installed, capture_output=True, text=True, timeout=300)
    assert finished.stdout.splitlines()[-1] == "set()", finished.stderr


def test_json_lists_the_releases_with_their_patches_and_the_release_that_needs_none(installed):
    frozen = json.loads(command("gpushim", "freeze", "--json", env=installed).stdout)
    assert frozen["gpushim"] == gpushim.__version__
    assert {(r["distribution"], r["version"]) for r in frozen["releases"]} == set(RELEASES.items())
    assert all(release["patches"] and release["fixed_in"] for release in frozen["releases"])


def test_inactive_pending_applied_failed_opt_in_and_disabled_patches_are_listed():
    records = [
        record("synth.a", "inactive"),
        record("synth.b", "pending"),
        record("synth.c", "applied"),
        record("synth.d", "failed"),
        record("synth.e", "disabled"),
        record("synth.f", "not-affected"),
        record("synth.g", "opt-in"),
    ]
    (release,) = freeze(records)["releases"]
    assert [(patch["id"], patch["state"]) for patch in release["patches"]] == [
        ("synth.a", "inactive"),
        ("synth.b", "pending"),
        ("synth.c", "applied"),
        ("synth.d", "failed"),
        ("synth.e", "disabled"),
        ("synth.g", "opt-in"),
    ]


def test_a_patch_not_backported_to_the_release_is_listed_with_the_release_that_fixes_it():
    records = [record("synth.a", "not-backported", fixed_in="1.9", affected=">=1.6,<1.9")]
    (release,) = freeze(records)["releases"]
    assert (release["patches"], release["fixed_in"]) == ([{"id": "synth.a", "state": "not-backported"}], "1.9")
    assert "#   synth.a: not-backported" in format_freeze(freeze(records)).splitlines()


def test_a_release_with_an_opt_in_patch_in_range_has_its_bug_and_an_upgrade():
    (release,) = freeze([record("synth.a", "opt-in", fixed_in="1.9", affected="<1.9")])["releases"]
    assert release["fixed_in"] == "1.9"


def test_the_upgrade_is_the_lowest_release_outside_the_range_of_every_patch_in_range_or_not():
    """As CuPy 13.3.0's: its last bug is fixed in 13.5.0, which has another that 13.6.0 fixes."""
    records = [
        record("synth.a", "pending", fixed_in="1.9", affected="<1.9"),
        record("synth.b", "not-affected", fixed_in="1.10", affected=">=1.9,<1.10"),
        record("synth.c", "disabled", fixed_in="1.7", affected="<1.7"),
    ]
    (release,) = freeze(records)["releases"]
    assert release["fixed_in"] == "1.10"
    assert "#   no gpushim patch is needed from synthlib-cuda12 1.10 on" in format_freeze(freeze(records))


def test_a_patch_in_range_that_upstream_has_not_fixed_leaves_no_release_to_upgrade_to():
    records = [record("synth.a", "pending", fixed_in="1.9"), record("synth.b", "applied", fixed_in=None)]
    (release,) = freeze(records)["releases"]
    assert (release["fixed_in"], set(release)) == (
        None,
        {"distribution", "version", "target", "patches", "fixed_in", "upstream_fixes"},
    )
    assert f"#   {NONE_KNOWN}" in format_freeze(freeze(records)).splitlines()


def test_the_text_of_a_release_that_no_patch_concerns():
    lines = format_freeze(freeze([record("synth.a", "not-affected", version="2.3.0")])).splitlines()
    assert lines[-2:] == ["synthlib-cuda12==2.3.0", "#   no gpushim patch applies to this release"]


def test_a_release_without_a_pip_version_is_recorded_in_a_comment():
    assert requirement("synthlib-cuda12", "1.5.0") == "synthlib-cuda12==1.5.0"
    assert requirement("synthlib-cuda12", "13.3.0garbage!") == (
        "# synthlib-cuda12 13.3.0garbage!: not pinned, as '13.3.0garbage!' is not a PEP 440 version"
    )
    no_version = "# synthlib-cuda12: its metadata gives no version, so it is not pinned"
    assert requirement("synthlib-cuda12", None) == no_version


def test_a_release_without_a_pip_version_does_not_stop_pip(tmp_path):
    site = tmp_path / "site"
    write_distribution(site, "synthlib-cuda12", "1.5.0")
    requirements = tmp_path / "requirements.txt"
    records = [record("synth.a", "inactive"), record("synth.b", "inactive", distribution="other", version=None)]
    lines = format_freeze(freeze(records)).splitlines()
    # gpushim as this environment has it, installed from this tree, which pip would build: not this test's concern
    requirements.write_text("\n".join(line for line in lines if not line.startswith(("gpushim", "-e "))) + "\n")
    resolved = pip_dry_run(requirements, environment(PYTHONPATH=str(site)))
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    assert "Requirement already satisfied: synthlib-cuda12==1.5.0 " in resolved.stdout


def test_status_and_freeze_work_without_packaging(installed):
    """``packaging`` is declared, but environments get broken: plain releases need none of it."""
    code = (
        "import sys; sys.modules['packaging'] = None; from gpushim.cli import main; "
        "sys.exit(main(['status']) or main(['freeze']))"
    )
    finished = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=installed)
    assert (finished.returncode, finished.stderr) == (0, "")
    assert "gpushim freeze" in finished.stdout


def test_numpy_is_pinned_where_a_patch_of_an_installed_release_gates_on_it(installed, tmp_path):
    """CuPy 13.3.0's NumPy 2 patches apply by NumPy's release: the log pins the NumPy they were decided on."""
    write_distribution(Path(installed["PYTHONPATH"]), "numpy", "2.2.6")
    frozen = json.loads(command("gpushim", "freeze", "--json", env=installed).stdout)
    (numpy,) = frozen["gating"]
    assert (numpy["distribution"], numpy["version"]) == ("numpy", "2.2.6")
    assert "cupy.fuse_python_scalar" in numpy["gates"]
    lines = command("gpushim", "freeze", env=installed).stdout.splitlines()
    assert lines[lines.index("numpy==2.2.6") + 1].startswith("#   decides whether these apply: cupy.")
