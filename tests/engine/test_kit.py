"""The patch author's kit: expect() and Parameters check a target's shape, as do expect_same(), expect_reads() and
expect_lines(); Parameters binds calls, wrap_property."""

from __future__ import annotations

import copy
import importlib.util
import types

import pytest

from gpushim import (
    Journal,
    Parameters,
    PatchedProperty,
    TargetMismatch,
    expect,
    expect_lines,
    expect_reads,
    expect_same,
)

module = types.ModuleType("target.core")


class Base:
    def inherited(self):
        return "inherited"


class Scalar(Base):
    """A stand-in for a target class."""

    def __init__(self, value):
        self.value = value

    @staticmethod
    def step(g, b, lr=0.1):
        return g, b, lr

    def method(self, a, b=2):
        return a, b

    @property
    def name(self):
        """The released property."""
        return f"v{self.value}"

    @name.setter
    def name(self, value):
        self.value = value


Scalar.__module__ = module.__name__
module.Scalar = Scalar


def test_expect_gives_the_object_at_a_dotted_path():
    assert expect(module, "Scalar.step", callable) is Scalar.step


@pytest.mark.parametrize(
    "path, kind, own, message",
    [
        ("Missing", None, False, "target.core has no Missing"),
        ("Scalar.missing.deeper", None, False, "target.core.Scalar has no missing"),
        ("Scalar.inherited", callable, True, "target.core.Scalar defines no inherited"),
        ("Scalar", staticmethod, False, "target.core.Scalar is not a staticmethod"),
        ("Scalar.step", type, False, "target.core.Scalar.step is not a class"),
        ("Scalar.value", callable, False, "target.core.Scalar has no value"),
        ("__name__", (dict, list), False, "target.core.__name__ is not a dict or a list"),
    ],
)
def test_expect_raises_a_target_mismatch_naming_what_was_expected(path, kind, own, message):
    with pytest.raises(TargetMismatch) as raised:
        expect(module, path, kind, own=own)
    assert str(raised.value) == message


def test_expect_own_reads_the_class_namespace_without_running_descriptors():
    assert isinstance(expect(Scalar, "step", staticmethod, own=True), staticmethod)


def test_expect_same_accepts_the_very_object():
    expect_same(module.Scalar, Scalar, "target.core.Scalar", "the Scalar class")


def test_expect_same_refuses_an_equal_object_naming_both():
    with pytest.raises(TargetMismatch) as raised:
        expect_same([], [], "target.core.registry[int]", "target.core.handler")
    assert str(raised.value) == "target.core.registry[int] is not target.core.handler"


def test_expect_reads_accepts_a_function_that_reads_every_name():
    expect_reads(Scalar.__init__, "value")


def test_expect_reads_names_the_function_and_the_names_it_does_not_read():
    with pytest.raises(TargetMismatch) as raised:
        expect_reads(Scalar.__init__, "value", "scale", "unit")
    assert str(raised.value) == f"{Scalar.__init__.__module__}.Scalar.__init__ does not read scale, unit"


def test_expect_reads_refuses_a_callable_without_code():
    with pytest.raises(TargetMismatch) as raised:
        expect_reads(len, "anything")
    assert str(raised.value) == "builtins.len has no code to read"


@pytest.fixture
def about_to_execute(tmp_path):
    """A module created from its file but not executed, as a patch acting before it meets it."""
    path = tmp_path / "gast_util.py"
    path.write_text("import sys\n\nif True:\n    VERSION = 1\n")
    spec = importlib.util.spec_from_file_location("target.gast_util", path)
    return importlib.util.module_from_spec(spec)


def test_expect_lines_reads_a_module_about_to_execute_comparing_lines_stripped(about_to_execute):
    expect_lines(about_to_execute, "import sys", "VERSION = 1")
    assert not hasattr(about_to_execute, "sys")


def test_expect_lines_names_the_module_and_the_first_line_it_lacks(about_to_execute):
    with pytest.raises(TargetMismatch) as raised:
        expect_lines(about_to_execute, "import sys", "VERSION = 2", "import os")
    assert str(raised.value) == "target.gast_util has no line 'VERSION = 2'"


def test_expect_lines_refuses_a_part_of_a_line(about_to_execute):
    with pytest.raises(TargetMismatch):
        expect_lines(about_to_execute, "VERSION")


def test_expect_lines_reads_a_functions_source():
    expect_lines(Scalar.method, "return a, b")


def test_expect_lines_of_a_target_without_source_is_a_target_mismatch():
    namespace: dict = {}
    exec("def generated():\n    return 1\n", namespace)
    with pytest.raises(TargetMismatch) as raised:
        expect_lines(namespace["generated"], "return 1")
    assert str(raised.value).startswith("the source of generated cannot be read: ")


def test_parameters_bind_as_python_binds_the_target():
    step = Parameters("g", "b", lr=0.1)
    assert step.bind(1, 2) == (1, 2, 0.1)
    assert step.bind(1, lr=3, b=2) == (1, 2, 3)


@pytest.mark.parametrize(
    "args, kwargs", [((1,), {}), ((1, 2, 3, 4), {}), ((1, 2), {"g": 1}), ((1, 2), {"momentum": 0.9})]
)
def test_a_call_the_target_would_refuse_raises_type_error_from_bind(args, kwargs):
    with pytest.raises(TypeError):
        Scalar.step(*args, **kwargs)
    with pytest.raises(TypeError):
        Parameters("g", "b", lr=0.1).bind(*args, **kwargs)


def test_check_accepts_the_same_names_order_and_defaults():
    Parameters("g", "b", lr=0.1).check(Scalar.step)
    Parameters("a", b=2).check(Scalar.method, method=True)
    Parameters("a").check(Scalar.method, method=True, leading=True)


@pytest.mark.parametrize(
    "parameters, message",
    [
        (Parameters("b", "g", lr=0.1), "takes (g, b, lr=0.1), expected (b, g, lr=0.1)"),
        (Parameters("g", "b", lr=0.2), "takes (g, b, lr=0.1), expected (g, b, lr=0.2)"),
        (Parameters("g", "b", "lr"), "takes (g, b, lr=0.1), expected (g, b, lr)"),
        (Parameters("g", "b"), "takes (g, b, lr=0.1), expected (g, b)"),
    ],
)
def test_check_raises_a_target_mismatch_with_both_signatures(parameters, message):
    with pytest.raises(TargetMismatch) as raised:
        parameters.check(Scalar.step)
    assert str(raised.value) == f"{__name__}.Scalar.step {message}"


def test_check_tells_parameters_that_are_not_positional_or_keyword_apart():
    def keyword_only(a, *, b=1):
        pass

    with pytest.raises(TargetMismatch, match=r"takes \(a, b \(not positional-or-keyword\)\)"):
        Parameters("a", b=1).check(keyword_only)


def test_check_reads_the_signature_cython_embeds_in_a_docstring():
    class CythonFunction:
        """Has no signature for inspect, as a Cython function compiled without binding."""

        __name__ = "array"
        __doc__ = "array(obj, dtype=None, bool copy=True, order=u'K', Py_ssize_t ndmin=0)\n\nMore text."

        def __call__(self, *args, **kwargs):
            pass

        @property
        def __signature__(self):
            raise ValueError("no signature found")

    Parameters("obj", dtype=None, copy=True, order="K", ndmin=0).check(CythonFunction())
    with pytest.raises(TargetMismatch, match=r"takes \(obj, dtype=None, copy=True, order='K', ndmin=0\)"):
        Parameters("obj", dtype=None, copy=False, order="K", ndmin=0).check(CythonFunction())


def test_check_reads_the_signature_cython_embeds_for_a_method_qualified_by_its_class():
    class CythonMethod:
        __name__ = "get"
        __doc__ = "_ndarray_base.get(self, stream=None, order=u'C')\n\nReturns a copy."

        @property
        def __signature__(self):
            raise ValueError("no signature found")

    Parameters(stream=None, order="C").check(CythonMethod(), method=True)
    CythonMethod.__doc__ = "forget(self, stream=None, order=u'C')"
    with pytest.raises(TargetMismatch, match="has no signature that can be read"):
        Parameters(stream=None, order="C").check(CythonMethod(), method=True)


@pytest.mark.parametrize("names", [("self", "a"), ("a", "a"), ("a-b",), ("lambda",)])
def test_parameters_refuse_names_that_cannot_be_bound(names):
    with pytest.raises(ValueError):
        Parameters(*names)


def test_wrap_property_reads_through_the_getter_with_the_released_one():
    journal = Journal()
    patched = journal.wrap_property(Scalar, "name", lambda released, self: released(self).upper(), "patched")
    try:
        assert Scalar(3).name == "V3"
        assert vars(Scalar)["name"] is patched and isinstance(patched, PatchedProperty)
        assert patched.__doc__ == "patched" and patched.fget.__qualname__ == "Scalar.name"
    finally:
        journal.undo()
    assert Scalar(3).name == "v3"


def test_a_wrapped_property_keeps_the_released_one_setter_and_undo():
    released = vars(Scalar)["name"]
    journal = Journal()
    patched = journal.wrap_property(Scalar, "name", lambda get, self: get(self), "patched")
    try:
        scalar = Scalar(1)
        scalar.name = 5
        assert scalar.value == 5 and patched.__wrapped__ is released
        assert copy.copy(patched) is patched and copy.deepcopy(patched) is patched
    finally:
        journal.undo()
    assert vars(Scalar)["name"] is released


@pytest.mark.parametrize("name", ["method", "missing", "inherited"])
def test_wrap_property_of_anything_but_an_own_property_is_a_target_mismatch(name):
    with pytest.raises(TargetMismatch, match=f"target.core.Scalar.{name} is not a property with a getter"):
        Journal().wrap_property(Scalar, name, lambda get, self: get(self), "patched")
