"""gpushim.source.recompiled: a function compiled again from its own source, rewritten, in its own module."""

from __future__ import annotations

import ast
import functools
import traceback

import pytest

from gpushim import TargetMismatch
from gpushim.source import recompiled

SCALE = 2


def scaled(values, factor=SCALE, *, offset=[]):  # noqa: B006 - the same default object must survive
    total = [value * factor for value in values]
    if not total:
        raise ValueError("nothing to scale")
    return total + offset


def _factor_three(tree):
    """``value * factor`` becomes ``value * 3``."""
    (found,) = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "factor"]
    found.id = "THREE"


THREE = 3


def test_the_rewritten_function_runs_in_the_module_namespace():
    again = recompiled(scaled, _factor_three)
    assert again([1, 2]) == [3, 6]
    assert scaled([1, 2]) == [2, 4]
    assert again.__globals__ is scaled.__globals__
    assert again.__qualname__ == scaled.__qualname__


def test_defaults_are_the_same_objects():
    again = recompiled(scaled, _factor_three)
    assert again.__defaults__ is scaled.__defaults__
    assert again.__kwdefaults__ is scaled.__kwdefaults__


def test_tracebacks_point_at_the_original_file_and_lines():
    again = recompiled(scaled, _factor_three)
    with pytest.raises(ValueError) as raised:
        again([])
    frame = traceback.extract_tb(raised.value.__traceback__)[-1]
    assert (frame.filename, frame.line) == (__file__, 'raise ValueError("nothing to scale")')


def test_a_rewrite_that_refuses_the_tree_is_a_mismatch():
    def refuse(tree):
        raise TargetMismatch("not the tree expected")

    with pytest.raises(TargetMismatch, match="not the tree expected"):
        recompiled(scaled, refuse)


def test_a_closure_or_a_decorator_is_a_mismatch():
    captured = 1

    def closure():
        return captured

    @functools.lru_cache(maxsize=None)
    def decorated():
        return 1

    for function in (closure, decorated.__wrapped__):
        with pytest.raises(TargetMismatch, match="closure or decorators"):
            recompiled(function, lambda tree: None)


def test_a_function_without_source_is_a_mismatch():
    namespace: dict = {}
    exec("def made():\n    return 1", namespace)
    with pytest.raises(TargetMismatch, match="cannot be read"):
        recompiled(namespace["made"], lambda tree: None)
