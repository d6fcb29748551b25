"""What a user installs: the wheel's license, typing marker and metadata, and gpushim under pytest; the sdist.

The sdist and the wheel are built from this tree with ``uv build`` (the
wheel from the sdist, as the release workflow builds them), checked with
``twine check``, and installed, the wheel with pytest, into virtual
environments of their own: an editable install hides what pytest does to an
installed plugin's package (it marks the package for assertion rewriting;
``gpushim-run`` has imported it before pytest starts).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import gpushim
from tests.cli.scripts import environment

ROOT = Path(__file__).parents[2]
PASSING_TEST = "import sys\n\n\ndef test_gpushim_is_active():\n    assert 'gpushim.auto' in sys.modules\n"


def uv(*arguments: str, cwd: Path | None = None) -> None:
    finished = subprocess.run(
        [shutil.which("uv") or "uv", *arguments], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert finished.returncode == 0, finished.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The folder with the sdist and the wheel built from it."""
    out = tmp_path_factory.mktemp("dist")
    uv("build", "--out-dir", str(out), str(ROOT))
    return out


@pytest.fixture(scope="module")
def wheel(built) -> Path:
    (found,) = built.glob("gpushim-*.whl")
    return found


@pytest.fixture(scope="module")
def sdist(built) -> Path:
    (found,) = built.glob("gpushim-*.tar.gz")
    return found


def venv_with(folder: Path, *requirements: str) -> Path:
    """The ``bin`` directory of a virtual environment at ``folder`` with ``requirements`` installed."""
    uv("venv", "--quiet", "--python", sys.executable, str(folder))
    uv("pip", "install", "--quiet", "--python", str(folder / "bin" / "python"), *requirements)
    return folder / "bin"


@pytest.fixture(scope="module")
def installed_wheel(wheel, tmp_path_factory) -> Path:
    """The ``bin`` directory of a virtual environment with the wheel and pytest installed."""
    return venv_with(tmp_path_factory.mktemp("venv"), str(wheel), f"pytest=={pytest.__version__}")


def test_twine_check_passes_the_sdist_and_the_wheel(sdist, wheel):
    """What PyPI will accept: the metadata, and the README rendered as the project page."""
    finished = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)], capture_output=True, text=True
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr


def test_the_sdist_installs_with_every_patch(sdist, tmp_path):
    bin = venv_with(tmp_path / "venv", str(sdist))
    finished = subprocess.run(
        [str(bin / "gpushim"), "patches", "--json"], env=environment(), capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 0, finished.stderr
    assert [patch["id"] for patch in json.loads(finished.stdout)] == gpushim.registry().ids


def test_the_wheel_carries_the_license_and_the_typing_marker(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = f"gpushim-{gpushim.__version__}.dist-info"
    assert zipfile.ZipFile(wheel).read(f"{dist_info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
    assert "gpushim/py.typed" in names


def test_the_metadata_says_what_it_is_for_and_names_no_address_that_does_not_exist_yet(wheel):
    metadata = zipfile.ZipFile(wheel).read(f"gpushim-{gpushim.__version__}.dist-info/METADATA").decode()
    fields = [line.split(": ", 1) for line in metadata.split("\n\n")[0].splitlines()]
    assert ["License-Expression", "Apache-2.0"] in fields
    assert [value for name, value in fields if name in ("Home-page", "Project-URL")] == []
    classifiers = {value for name, value in fields if name == "Classifier"}
    assert {"Typing :: Typed", "Framework :: Pytest", "Environment :: GPU :: NVIDIA CUDA :: 12"} <= classifiers


def test_the_readme_installs_the_wheel_this_release_builds_pypi_only_after_publication_and_the_changelog_dates_it(
    wheel,
):
    readme = (ROOT / "README.md").read_text()
    assert f"python -m pip install wheels/{wheel.name}\n" in readme
    before, after = readme.split("After publication", 1)
    assert "pip install gpushim==" not in before
    assert f"python -m pip install gpushim=={gpushim.__version__}\n" in after.split("##", 1)[0]
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(gpushim.__version__)} \(\d{{4}}-\d\d-\d\d\)$", changelog, re.MULTILINE)


def test_the_license_is_the_apache_license_2_0():
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text


@pytest.mark.parametrize("script", ["gpushim", "gpushim-run"])
def test_the_installed_scripts_print_their_version(installed_wheel, script):
    finished = subprocess.run(
        [str(installed_wheel / script), "--version"], env=environment(), capture_output=True, text=True, timeout=120
    )
    assert finished.stdout.startswith(f"{script} {gpushim.__version__} from {installed_wheel.parent}/lib/")


def test_gpushim_run_pytest_passes_with_warnings_as_errors(installed_wheel, tmp_path):
    """pytest marks gpushim for rewriting, which gpushim-run's bootstrap imported first; that must not warn."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    (tmp_path / "test_suite.py").write_text(PASSING_TEST)
    finished = subprocess.run(
        [str(installed_wheel / "gpushim-run"), str(installed_wheel / "pytest"), "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "1 passed" in finished.stdout
    assert "PytestAssertRewriteWarning" not in finished.stdout + finished.stderr
