"""dali.constant_scalar_shape: a Python scalar made a constant node is a ``(1,)`` tensor (NVIDIA/DALI#5191).

Everything runs on the CPU with the installed release: pipelines on the CPU
(``device_id=None``) whose output is a constant (``constant_corpus``).
``test_gpu_constant_scalar_shape`` makes the same constants on a device.
"""

from __future__ import annotations

import pytest

pytest.importorskip("nvidia.dali")

import wrapt

from gpushim.patches.dali.constant_scalar_shape import patch
from tests.dali import constant_corpus
from tests.support import applied, gate, record_corpus, refusal

GATE = gate(patch)
SCALARS = ("3.0", "3", "True")
MADE_NODES = ("Constant(device)", "Constant(dtype=INT32, device)", "Constant(layout='')", "fn.cast(value)")


def shapes(outcome):
    return [sample["shape"] for sample in outcome]


@GATE.affected_only
def test_needed_python_scalars_are_one_element_tensors_without_gpushim():
    outcomes = constant_corpus.run()
    assert {shapes(outcomes[f"{made} of {value}"]) == [[1], [1]] for made in MADE_NODES for value in SCALARS} == {True}


@GATE.affected_only
def test_effective_python_scalars_are_scalars(this_patch):
    outcomes = constant_corpus.run()
    assert {shapes(outcomes[f"{made} of {value}"]) == [[], []] for made in MADE_NODES for value in SCALARS} == {True}


@GATE.affected_only
def test_effective_only_python_scalars_change():
    released = constant_corpus.run()
    with applied(patch):
        patched = constant_corpus.run()
    changed = {case for case in released if released[case] != patched[case]}
    made = {maker for maker in constant_corpus._makers("cpu") if "shape=" not in maker}
    assert changed == {f"{maker} of {value}" for maker in made for value in SCALARS}


@GATE.affected_only
def test_effective_a_call_that_does_not_bind_is_refused_by_the_release(this_patch):
    from nvidia.dali import types

    patched, released = refusal(types.ConstantNode, "cpu", 3.0)
    assert patched == released


@GATE.unaffected_only
def test_harmless_not_affected_and_constant_node_is_dalis_own(gpushim_patched):
    from nvidia.dali import types

    assert gpushim_patched.record(patch.id)["state"] == "not-affected"
    assert not isinstance(types.ConstantNode, wrapt.ObjectProxy)


@GATE.recorded_only
def test_faithful_outcomes_of_the_corpus():
    """Patched old releases record what unpatched 1.35.0 records (1.33.0's ConstantNode); the matrix compares them."""
    outcomes = record_corpus(patch, constant_corpus.run)
    assert len(outcomes) == len(constant_corpus.cases()) == 59
