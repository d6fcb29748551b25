"""Patched callables pickle and copy as their originals do, in a user's program with gpushim and without it."""

from __future__ import annotations

import pytest

from tests.engine.adversary import (
    REPORT,
    WITHOUT_GPUSHIM,
    adversary_site,
    assert_same_program,
    program_output,
    run_program,
)
from tests.engine.catalogues import STANDALONE_PATCH

PICKLING = """
import copy, pickle
{early}
import synthadv
{late}
widget = synthadv.Widget()
reads = {{
    "a module's function": lambda: synthadv.compute,
    "a method read through its class": lambda: synthadv.Widget.size,
    "a method read through an instance": lambda: widget.size,
    "a local function": lambda: synthadv.local,
    "a static method read through its class": lambda: synthadv.Widget.make,
    "a callable that refuses pickling and copying": lambda: synthadv.refuses,
    "a callable that claims a function's name": lambda: synthadv.fused,
    "a function cached by functools.lru_cache": lambda: synthadv.cached,
}}
functions = {{"a module's function", "a local function", "a function cached by functools.lru_cache"}}
ways = {{"pickle": lambda value: pickle.loads(pickle.dumps(value)), "copy": copy.copy, "deepcopy": copy.deepcopy}}
for label, read in reads.items():
    for way, act in ways.items():
        value = read()
        try:
            result = act(value)
        except Exception as error:
            print(label, way, "raises", type(error).__name__)
            continue
        arguments = (widget, 1) if label == "a method read through its class" else (1,)
        # The copy behaves as the attribute does now, patched or not; a function copies to itself.  (A patched
        # callable copies to itself too, where a callable object copies to another.)
        print(label, way, result(*arguments) == read()(*arguments), result is value if label in functions else "")
"""
IN_WIDGET = STANDALONE_PATCH.replace("journal.wrap(module,", "journal.wrap(module.Widget,")
PICKLED_PATCHES = {
    "size": IN_WIDGET,
    "make": IN_WIDGET,
    **{name: STANDALONE_PATCH for name in ("local", "refuses", "fused", "cached")},
}


@pytest.mark.parametrize("where", ["early", "late"])
def test_patched_callables_pickle_and_copy_as_their_originals_do(where, tmp_path):
    """Functions, methods through the class and an instance, a static method, and what cannot be pickled or copied."""
    site = adversary_site(tmp_path, None)
    for name, source in PICKLED_PATCHES.items():
        (site / "synthcatalogue" / "synth" / f"{name}.py").write_text(
            source.format(id=f"synth.{name}", affected=">=1.0,<2.0", name=name)
        )
    program = PICKLING.format(
        early="import gpushim.auto" if where == "early" else "", late="import gpushim.auto" if where == "late" else ""
    )
    finished = run_program(site, program + REPORT.replace("json", "__import__('json')"))
    baseline = run_program(site, PICKLING.format(early="", late=""), env={WITHOUT_GPUSHIM: "1"})
    assert_same_program(finished, baseline)
    assert "raises" in baseline.stdout and "True True" in baseline.stdout  # both kinds are tried
    assert set(program_output(finished)[1].values()) == {"applied"}
