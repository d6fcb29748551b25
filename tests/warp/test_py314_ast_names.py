"""warp.py314_ast_names: on Python 3.14, ``import warp`` up to 1.6.2 raises for ``ast.Str``.

No Python 3.14 can be installed here, so the cell ``warp-1.6.2-py313-noast``
stands in: Python 3.13 with what 3.14 removed from ``ast`` removed at the
startup of every interpreter (``matrix/py314_emulation``), before anything
imports Warp.  ``warp-1.6.2-py313``, the same release on 3.13 as it is, is
the reference: the corpus (``tests/warp/constants_corpus.py``) records
kernels' outputs and their generated code in a fresh interpreter, patched in
the first cell and as released in the second, and the matrix compares them.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpushim.patches.warp.py314_ast_names import patch
from tests.support import gate, record_faithful, run_python

GATE = gate(patch)
ROOT = str(Path(__file__).parents[2])


@GATE.affected_only
def test_needed_import_warp_raises_without_gpushim():
    finished = run_python("import warp")
    assert finished.returncode != 0
    assert "AttributeError: module 'ast' has no attribute 'Str'" in finished.stderr


@GATE.affected_only
def test_effective_warp_imports_and_the_ast_module_stays_as_it_was():
    """Only ``warp.codegen`` sees the old names, through a view of ``ast`` of its own."""
    code = "\n".join(
        [
            "import gpushim.auto, ast",
            "import warp.codegen",
            "print(hasattr(ast, 'Str'), hasattr(ast.Constant(1), 'n'), warp.codegen.ast is ast)",
            "print(warp.codegen.ast.Str.__name__, isinstance(ast.Constant(True), warp.codegen.ast.Num))",
        ]
    )
    finished = run_python(code)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert finished.stdout.splitlines()[-2:] == ["False False False", "Str False"]


@GATE.recorded_only
def test_faithful_kernels_and_their_generated_code_are_the_release_s_on_python_3_13():
    """Recorded patched on the emulated 3.14, as released on 3.13; the matrix compares them."""
    code = "\n".join(
        [
            f"import sys; sys.path.insert(0, {ROOT!r})",
            "import gpushim.auto, json",
            "from tests.warp import constants_corpus",
            "print(json.dumps(constants_corpus.outcomes()))",
        ]
    )
    finished = run_python(code)
    assert finished.returncode == 0, finished.stderr[-3000:]
    outcomes = json.loads(finished.stdout.splitlines()[-1])
    assert outcomes["ranges"]["out"] == [3.0, 12.0, -3.0, 6.0]
    record_faithful(patch, outcomes)
