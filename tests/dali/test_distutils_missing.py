"""dali.distutils_missing: on Python 3.12 without setuptools, ``import nvidia.dali`` needs ``distutils``.

The corpus (``tests/dali/cpu_corpus.py``) runs CPU pipelines, conditionals
through the vendored autograph among them, over several dtypes; an
interpreter that imports DALI for the first time, the patch applied, records
it.  The cell ``dali-1.35.0-py312`` (a uv venv: no setuptools, so no
``distutils``) records it patched, ``dali-1.35.0-py312-setuptools`` (the
environment 1.35.0 was built for) as the reference.  What is special to this
bug: the ``distutils`` provided for DALI's ``gast_util`` must be gone for
user code, and its ``LooseVersion`` must compare as distutils' does.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from gpushim.patches.dali.distutils_missing import LooseVersion, patch
from gpushim.releases import is_affected
from tests.dali.cpu_corpus import recorded_in_a_fresh_interpreter
from tests.support import gate, run_python

GATE = gate(patch)


@GATE.recorded_only
@pytest.mark.skipif(sys.version_info < (3, 12), reason="its records compare on Python 3.12 only")
def test_faithful_pipelines_give_what_the_release_gives_with_setuptools():
    """Recorded patched on Python 3.12 without setuptools, and on the reference with it; the matrix compares them."""
    recorded_in_a_fresh_interpreter(patch, GATE.affected)


@GATE.affected_only
def test_user_code_cannot_import_distutils_after_dali_imported_with_gpushim():
    """One interpreter: nothing stayed in ``sys.modules``, the import fails as without gpushim, status says why."""
    code = "\n".join(
        [
            "import gpushim.auto, gpushim, sys",
            "import nvidia.dali",
            "assert 'distutils' not in sys.modules and 'distutils.version' not in sys.modules",
            f"print(gpushim.record({patch.id!r}).reason)",
            "try:",
            "    import distutils",
            "except ModuleNotFoundError as error:",
            "    print(error)",
        ]
    )
    finished = run_python(code)
    assert finished.returncode == 0, finished.stderr[-3000:]
    python = ".".join(map(str, sys.version_info[:3]))
    assert finished.stdout.splitlines()[-2:] == [
        f"Python {python} >=3.12; no module named distutils; {patch.before} executed with distutils, distutils.version"
        " provided, withdrawn since",
        "No module named 'distutils'",
    ]


# What each release's TensorFlow-plugin sdist (nvidia-dali-tf-plugin-cuda120, on the registry for every release)
# compares versions with, and the commit it names.  NVIDIA/DALI#5687 moved the plugin and DALI's Python code from
# distutils to packaging at once; the main wheels of 1.36 to 1.52 cannot be installed to look at gast_util itself.
PLUGIN_SDISTS = {
    "1.42.0": ("3c97d9b61", "distutils.version"),
    "1.43.0": ("4562f157a", "distutils.version"),
    "1.44.0": ("a0feb6cd9", "packaging.version"),
}


@pytest.mark.parametrize("release", sorted(PLUGIN_SDISTS))
def test_affected_are_the_releases_whose_sources_still_import_distutils(release):
    assert is_affected(release, patch.affected) is (PLUGIN_SDISTS[release][1] == "distutils.version")


def test_fixed_in_is_the_first_release_whose_sources_import_packaging():
    assert patch.fixed_in == next(r for r in sorted(PLUGIN_SDISTS) if PLUGIN_SDISTS[r][1] == "packaging.version")


# What the RECORD of nvidia-dali-cuda120 1.30.0's wheel says of the two files that decide here.
RECORD_1_30_0 = {
    "nvidia/dali/__init__.py": "nvidia/dali/__init__.py,sha256=Vytf0xfK5BpFcu_obGqz3AXpDJlNTz_2kK2vxpKeYbg,1131",
    "nvidia/dali/_autograph/pyct/gast_util.py": (
        "nvidia/dali/_autograph/pyct/gast_util.py,sha256=ixaVM4DqUinXmk3wn-xVHCo8yYx8dLTAAiRrkwIsLHg,3011"
    ),
}


def upgraded_from_1_30_0(target: Path) -> None:
    """This release in ``target`` as ``pip install --target --upgrade`` leaves it over 1.30.0: its folder stays.

    What this release installed is linked, not copied; 1.30.0's folder is
    this release's with its Version and 1.30.0's RECORD lines for the files above.
    """
    site = Path(importlib.util.find_spec("nvidia.dali").origin).parents[2]
    (installed,) = site.glob(f"{GATE.release[0].replace('-', '_')}-{GATE.release[1]}.dist-info")
    lines = (installed / "RECORD").read_text().splitlines()
    for top in {line.partition("/")[0] for line in lines} - {installed.name, ".."}:
        if (site / top).exists():
            (target / top).symlink_to(site / top)
    shutil.copytree(installed, target / installed.name)
    leftover = target / installed.name.replace(GATE.release[1], "1.30.0")
    shutil.copytree(installed, leftover)
    metadata = (leftover / "METADATA").read_text()
    (leftover / "METADATA").write_text(metadata.replace(f"\nVersion: {GATE.release[1]}\n", "\nVersion: 1.30.0\n", 1))
    (leftover / "RECORD").write_text(
        "\n".join(RECORD_1_30_0.get(line.partition(",")[0], line) for line in lines) + "\n"
    )


@GATE.affected_only
def test_the_release_beside_a_folder_an_upgrade_left_behind_is_patched(tmp_path):
    """1.30.0's folder sorts first; the files are 1.35.0's, whose RECORD has them, before and after the import."""
    upgraded_from_1_30_0(tmp_path)
    code = "\n".join(
        [
            "import gpushim.auto, gpushim",
            f"print(gpushim.record({patch.id!r}).installed_version)",
            "import nvidia.dali",
            f"record = gpushim.record({patch.id!r})",
            "print(nvidia.dali.__file__, record.state, record.installed_version)",
        ]
    )
    finished = run_python(code, env={"PYTHONPATH": str(tmp_path)})
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert finished.stdout.splitlines()[-2:] == [
        GATE.release[1],
        f"{tmp_path / 'nvidia' / 'dali' / '__init__.py'} applied {GATE.release[1]}",
    ]


VERSIONS = ["0.4", "0.4.0", "0.5", "0.5.3", "0.7.0", "0.2", "1.0rc1", "1.0.post1", "10.1", "2.0.0.dev0", "0.10", "0.9"]


@pytest.mark.skipif(importlib.util.find_spec("distutils") is None, reason="no distutils to compare with here")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("other", VERSIONS)
@pytest.mark.parametrize("version", VERSIONS)
def test_loose_version_compares_as_distutils_does(version, other):
    from distutils.version import LooseVersion as Theirs

    def comparisons(cls):
        outcomes = []
        for compare in ("__lt__", "__le__", "__eq__", "__ge__", "__gt__"):
            for right in (cls(other), other):
                try:
                    outcomes.append(getattr(cls(version), compare)(right))
                except TypeError as error:
                    outcomes.append(f"TypeError {error}")
        outcomes.append(other < cls(version))
        return outcomes

    assert comparisons(LooseVersion) == comparisons(Theirs)
    ours, theirs = LooseVersion(version), Theirs(version)
    assert (str(ours), ours.version) == (str(theirs), theirs.version)


def test_status_imports_nothing_to_tell_whether_distutils_can_be_found():
    """setuptools' distutils finder answers by importing ``setuptools._distutils``, about 270 modules."""
    code = (
        "import sys, gpushim\n"
        "before = set(sys.modules)\n"
        f"state = gpushim.record({patch.id!r}).state\n"
        "new = {name.partition('.')[0] for name in set(sys.modules) - before}\n"
        "print(state, sorted(new & {'setuptools', 'distutils'}))"
    )
    finished = run_python(code)
    assert finished.stdout.split(maxsplit=1) == [GATE.state, "[]\n"], finished.stderr[-3000:]
