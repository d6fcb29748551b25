"""cupy.none_comparison: ``arr == None`` and ``arr != None`` on Python 3.12 and later (cupy/cupy#8493).

Before 13.4.0, on Python 3.12, the comparisons go to ``numpy.equal`` and
``numpy.not_equal``, which fail; with gpushim they answer with an array of
False or True, as 13.4.0 does.  Each case compares a device array (memory
nobody touches) with an operand, ``cupy.zeros`` and ``cupy.ones`` being
recorders for the case, and records the calls they got or the error.  The
comparisons with other operands launch kernels, which without a device
fail, as in the reference; ``test_gpu_none_comparison.py`` sees the arrays.
"""

import contextlib
import operator
from unittest import mock

import pytest

cupy = pytest.importorskip("cupy")

import numpy

from gpushim.patches.cupy.none_comparison import patch
from tests.cupy.fusion_tracing import untouched_allocator
from tests.support import gate, record_corpus

GATE = gate(patch)
# Without a driver, a kernel's launch asks for the current stream in a function that cannot raise, and CuPy
# reports the failure as unraisable before the launch raises it.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

SHAPES = ((3,), (2, 3), (), (0,))
OPERANDS = {
    "None": None,
    "Ellipsis": Ellipsis,
    "object()": object(),
    "NotImplemented": NotImplemented,
    "1": 1,
    "1.5": 1.5,
    "numpy.float64(1)": numpy.float64(1),
    "[1, 2, 3]": [1, 2, 3],
    "'a'": "a",
}
OPERATORS = {
    "a == x": operator.eq,
    "a != x": operator.ne,
    "x == a": lambda a, x: x == a,
    "x != a": lambda a, x: x != a,
    "a < x": operator.lt,
}


def cases():
    return {
        f"{expression} a: {shape} x: {operand}": (expression, shape, operand)
        for expression in OPERATORS
        for shape in SHAPES
        for operand in OPERANDS
    }


def run(selected=None):
    """``{case: {"made": [[function, args, kwargs]]} or {"error": ...}}``."""
    every, outcomes, made = cases(), {}, []

    def recorder(name):
        return lambda *args, **kwargs: made.append([name, repr(args), repr(kwargs)]) or name

    with contextlib.ExitStack() as stack:
        stack.enter_context(untouched_allocator())
        stack.enter_context(mock.patch.object(cupy, "zeros", recorder("zeros")))
        stack.enter_context(mock.patch.object(cupy, "ones", recorder("ones")))
        for case in every if selected is None else selected:
            expression, shape, operand = every[case]
            a = cupy.empty(shape)
            del made[:]
            try:
                answer = OPERATORS[expression](a, OPERANDS[operand])
            except Exception as error:
                outcomes[case] = {"error": f"{type(error).__name__}: {error}"}
            else:
                outcomes[case] = {"made": list(made), "answer": answer if isinstance(answer, str) else repr(answer)}
    return outcomes


NONE_CASES = [case for case in cases() if case.endswith("x: None") and "<" not in case]


@GATE.affected_only
def test_needed_comparisons_with_none_fail_without_gpushim():
    outcomes = run(NONE_CASES)
    assert all("error" in outcome for outcome in outcomes.values()), outcomes


@GATE.affected_only
@pytest.mark.parametrize("expression, made", [("a == x", "zeros"), ("x == a", "zeros"), ("a != x", "ones")])
def test_effective_a_comparison_with_none_makes_an_array_of_its_shape(expression, made, this_patch):
    case = f"{expression} a: (2, 3) x: None"
    assert run([case])[case] == {"made": [[made, "([2, 3],)", "{'dtype': <class 'numpy.bool'>}"]], "answer": made}


@GATE.affected_only
def test_effective_the_module_reads_numpy_s_own_objects_otherwise(this_patch):
    from cupy._core import core

    assert core.numpy.__wrapped__ is numpy
    assert core.numpy.add is numpy.add and core.numpy.ndarray is numpy.ndarray
    assert core.numpy.equal is not numpy.equal


@GATE.unaffected_only
def test_harmless_the_module_reads_numpy_itself(gpushim_patched):
    from cupy._core import core

    assert core.numpy is numpy


@GATE.recorded_only
def test_faithful_answers_and_errors_of_the_corpus(gpushim_patched):
    """Patched old releases record what unpatched 13.4.0 records, on the same Python; the matrix compares them."""
    outcomes = record_corpus(patch, run)
    assert len(outcomes) == len(cases()) == 180
