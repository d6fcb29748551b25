"""Every GPU test carries its CPU twin's gate: it runs on the releases where that patch's CPU tests do.

A GPU test (marked with ``tests.gpu.on_gpu``, in ``tests/<library>/test_gpu_<patch>.py``)
runs only where a device is, so a test written for the releases a patch touches
and left to run on the others fails first on a GPU host, against a release that
lacks what it uses.  So each one carries a mark of a :class:`tests.support.Gate`
(``affected_only``, ``ends_only``, ``unaffected_only``, ``recorded_only``) of a patch whose CPU
tests, ``tests/<library>/test_<patch>.py``, gate with that same mark.  Read from
the source: the tests of a library are collected only where it is installed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
MARKS = ("affected_only", "ends_only", "unaffected_only", "recorded_only")
GPU_MODULES = sorted(TESTS.glob("*/test_gpu_*.py"))


def gates(tree: ast.Module) -> dict[str, str]:
    """The module's gates by name (``GATE = gate(patch)``), each as the patch module it gates on."""
    patches = {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpushim.patches.")
        for alias in node.names
        if alias.name == "patch"
    }
    return {
        target.id: patches[node.value.args[0].id]
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) == "gate"
        and ast.unparse(node.value.args[0]) in patches
        for target in node.targets
    }


def gate_marks(function: ast.FunctionDef, gates: dict[str, str]) -> set[tuple[str, str]]:
    """The Gate marks ``function`` carries: (patch module, mark)."""
    return {
        (gates[decorator.value.id], decorator.attr)
        for decorator in function.decorator_list
        if isinstance(decorator, ast.Attribute)
        and isinstance(decorator.value, ast.Name)
        and decorator.value.id in gates
        and decorator.attr in MARKS
    }


def marks_of(path: Path) -> dict[str, set[tuple[str, str]]]:
    """The Gate marks of each test function of the module at ``path``, by name."""
    tree = ast.parse(path.read_text())
    found = gates(tree)
    return {
        node.name: gate_marks(node, found)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
    }


def gpu_tests(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and "on_gpu" in map(ast.unparse, node.decorator_list)
    ]


def cpu_marks(patch_module: str) -> set[tuple[str, str]]:
    """The Gate marks that the CPU tests of ``gpushim.patches.<library>.<name>`` carry."""
    library, name = patch_module.split(".")[-2:]
    twin = TESTS / library / f"test_{name}.py"
    return set().union(*marks_of(twin).values()) if twin.exists() else set()


def ungated(path: Path) -> dict[str, list[tuple[str, str]]]:
    """The GPU tests of the module at ``path`` that carry no Gate mark of their CPU twin, with the marks they carry."""
    marks = marks_of(path)
    return {
        name: sorted(marks[name])
        for name in gpu_tests(path)
        if not marks[name] or not all(mark in cpu_marks(mark[0]) for mark in marks[name])
    }


@pytest.mark.parametrize("path", GPU_MODULES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_gpu_test_carries_a_gate_of_its_cpu_twin(path):
    assert ungated(path) == {}


def test_a_gpu_test_without_a_gate_or_with_one_its_twin_lacks_is_refused(tmp_path):
    module = tmp_path / "test_gpu_example.py"
    module.write_text(
        "from gpushim.patches.warp.empty_slice import patch\n"
        "GATE = gate(patch)\n\n"
        "@on_gpu\n@GATE.affected_only\ndef test_gated(): pass\n\n"
        "@on_gpu\n@GATE.unaffected_only\ndef test_gated_as_no_cpu_test_is(): pass\n\n"
        "@on_gpu\ndef test_ungated(): pass\n\n"
        "def test_on_the_cpu(): pass\n"
    )
    assert ungated(module) == {
        "test_gated_as_no_cpu_test_is": [("gpushim.patches.warp.empty_slice", "unaffected_only")],
        "test_ungated": [],
    }
