"""warp.py314_overload_stub: on Python 3.14, ``wp.overload`` of a stub with ``...`` or a docstring raises.

Run where ``warp.py314_ast_names`` is (``warp-1.6.2-py313-noast``, 3.13 with
what 3.14 removed from ``ast`` removed at startup); the corpus overloads a
generic kernel with stubs of every kind of body, those ``overload`` accepts
and those it refuses, and is compared with the same release on 3.13 as it
is (``warp-1.6.2-py313``).
"""

from __future__ import annotations

from gpushim.patches.warp.py314_overload_stub import overload_stub, patch
from tests.support import gate, record_corpus, run_python

GATE = gate(patch)

BODIES = {
    "ellipsis": "    ...",
    "docstring": '    """A stub."""',
    "pass": "    pass",
    "docstring and ellipsis": '    """A stub."""\n    ...',
    "string and pass": '    "a string"\n    pass',
    "bytes": "    b'bytes'",
    "number": "    1",
    "None": "    None",
    "assignment": "    x = 1",
    "ellipsis and return": "    ...\n    return",
}


def outcomes() -> dict:
    found = {}
    for name, body in BODIES.items():
        try:
            overload_stub(body)
            found[name] = "accepted"
        except Exception as error:
            found[name] = f"{type(error).__name__}: {error}"
    return found


@GATE.affected_only
def test_needed_with_warp_importable_a_stub_raises_without_this_patch():
    code = "\n".join(
        [
            "import gpushim.auto",
            "from gpushim.patches.warp.py314_overload_stub import overload_stub",
            "overload_stub('    ...')",
        ]
    )
    finished = run_python(code, env={"GPUSHIM_DISABLE": patch.id})
    assert "AttributeError: module 'ast' has no attribute 'Str'" in finished.stderr


@GATE.recorded_only
def test_faithful_stubs_are_accepted_and_refused_as_on_python_3_13():
    """Recorded patched on the emulated 3.14, as released on 3.13; the matrix compares them."""
    found = record_corpus(patch, outcomes)
    assert [name for name, outcome in found.items() if outcome == "accepted"] == list(BODIES)[:5]
