"""dali.gast_pkg_resources: with gast < 0.5.3 and no ``pkg_resources``, ``import nvidia.dali`` raises UnboundLocalError.

The corpus (``tests/dali/cpu_corpus.py``) runs CPU pipelines, conditionals
through the vendored autograph among them, over several dtypes; an
interpreter that imports DALI for the first time, the patch applied, records
it.  The cell ``dali-1.32.0-gast040`` (gast 0.4.0, setuptools 82.0.0, the
first without ``pkg_resources``) records it patched, ``dali-1.32.0`` (the
gast DALI resolves to, which states its version) as the reference.  What is
special to this bug: the ``pkg_resources`` provided for DALI's ``gast_util``
must be gone for user code, and gast left as it was.
"""

from __future__ import annotations

import pytest

from gpushim.patches.dali.gast_pkg_resources import DistributionNotFound, get_distribution, patch
from tests.dali.cpu_corpus import recorded_in_a_fresh_interpreter
from tests.support import gate, run_python

GATE = gate(patch)


@GATE.recorded_only
def test_faithful_pipelines_give_what_the_release_gives_with_a_gast_that_states_its_version():
    """Recorded patched with gast 0.4.0 and setuptools 82, and on the reference; the matrix compares them."""
    recorded_in_a_fresh_interpreter(patch, GATE.affected)


@GATE.affected_only
def test_user_code_cannot_import_pkg_resources_after_dali_imported_with_gpushim_and_gast_is_unchanged():
    """One interpreter: gast_util chose gast 0.4's Assign, status says why, and nothing stayed."""
    code = "\n".join(
        [
            "import gpushim.auto, gpushim, sys, gast",
            "import nvidia.dali",
            "from nvidia.dali._autograph.pyct import gast_util",
            "assert 'pkg_resources' not in sys.modules and not hasattr(gast, '__version__')",
            "print(gast_util.compat_assign.__name__)",
            f"print(gpushim.record({patch.id!r}).reason)",
            "try:",
            "    import pkg_resources",
            "except ModuleNotFoundError as error:",
            "    print(error)",
        ]
    )
    finished = run_python(code)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert finished.stdout.splitlines()[-3:] == [
        "_compat_assign_gast_4",
        f"gast 0.4.0 <0.5.3; no module named pkg_resources; {patch.before} executed with pkg_resources provided,"
        " withdrawn since",
        "No module named 'pkg_resources'",
    ]


def test_the_provided_get_distribution_reads_versions_from_metadata():
    from importlib import metadata

    assert get_distribution("numpy").version == metadata.version("numpy")


def test_the_provided_get_distribution_raises_for_what_is_not_installed():
    with pytest.raises(DistributionNotFound, match="gpushim-nowhere"):
        get_distribution("gpushim-nowhere")
