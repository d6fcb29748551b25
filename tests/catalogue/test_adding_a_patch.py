"""Adding a patch to a library takes its module, its test module and, if it needs new releases, a cell.

Shown on a temporary copy of the tree: a new module under ``patches/warp/``
is registered, listed in the generated patch table, given a derived state in
every cell and so covered by the contract test, with no other file edited.
"""

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

NEW_PATCH = '''
"""A synthetic bug of Warp 1.6.0, added as a contributor would add one."""

from gpushim import Patch

patch = Patch(
    id="warp.synthetic_example",
    affected=">=1.6.0,<1.6.1",
    fixed_in="1.6.1",
    issue="NVIDIA/warp#0",
    fix="NVIDIA/warp@0000000",
    summary="An example that exists only in this test.",
)


@patch.applier
def _apply(warp, journal):
    pass


@patch.prober
def _probe():
    return None
'''

CHECK = """
import gpushim
from gpushim.cli import patch_table
from gpushim.expectations import expected_state

assert "warp.synthetic_example" in gpushim.registry().ids
assert "| `warp.synthetic_example` | warp |" in patch_table()
assert expected_state("warp.synthetic_example", {"warp-lang": "1.6.0", "numpy": "2.2.6"}) == "applied"
assert expected_state("warp.synthetic_example", {"warp-lang": "1.6.1", "numpy": "2.2.6"}) == "not-affected"
print("ok")
"""


def test_a_new_patch_module_is_registered_documented_and_given_states_in_every_cell(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(ROOT / "shims", site / "gpushim", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "patches", site / "gpushim" / "patches", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", site / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "matrix", tmp_path / "matrix")
    (site / "gpushim" / "patches" / "warp" / "synthetic_example.py").write_text(textwrap.dedent(NEW_PATCH))
    finished = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=tmp_path, env={"PYTHONPATH": str(site)}, capture_output=True, text=True
    )
    assert finished.stdout.strip() == "ok", finished.stderr
