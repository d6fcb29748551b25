"""What a patch expects of its target, checked before it changes anything, and calls read as the target reads them.

A patch is written for one shape of its target: the attributes it reads and
replaces, the parameters of the callables it wraps.  :func:`expect` and
:meth:`Parameters.check` find that shape or raise
:class:`~gpushim.TargetMismatch` with a message naming what was expected,
which becomes the ``failed`` record's reason; the target stays as released.

:class:`Parameters` then binds a call's arguments as the wrapped callable
binds them, so that a wrapper reads ``momentum`` wherever the caller put it::

    _STEP_DETAIL = Parameters("g", "b", "lr", "momentum", "dampening", "weight_decay", "nesterov", "t", "params")

    def step_detail(wrapped, instance, args, kwargs):
        try:
            g, b, lr, momentum, dampening, weight_decay, nesterov, t, params = _STEP_DETAIL.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call the release rejects, with its own message
        ...

    @patch.applier
    def _apply(optim, journal):
        sgd = expect(optim, "SGD", type)
        expect(sgd, "step_detail", staticmethod, own=True)
        _STEP_DETAIL.check(sgd.step_detail)
        journal.wrap(sgd, "step_detail", step_detail)
"""

from __future__ import annotations

from .errors import TargetMismatch

TYPE_CHECKING = False  # typing costs ~2 ms to import, as in the rest of gpushim
if TYPE_CHECKING:
    from typing import Any, Callable, Optional, Union

    Kind = Union[None, Callable[[object], bool], type, tuple]  # the Callable is ``callable`` itself

_MISSING = object()


def name_of(owner: object) -> str:
    """How messages name ``owner``: a module by its name, a class or function by its module and qualified name."""
    module, qualname = getattr(owner, "__module__", None), getattr(owner, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}.{qualname}"
    name = getattr(owner, "__name__", None)
    return name if isinstance(name, str) else repr(owner)


def _kind_name(kind: Kind) -> str:
    if kind is callable:
        return "callable"
    if isinstance(kind, tuple):
        return " or ".join(_kind_name(each) for each in kind)
    if kind is type:
        return "a class"
    return f"a {kind.__name__}"  # pyright: ignore[reportOptionalMemberAccess]  (expect never names None, every kind)


def _is(value: object, kind: Kind) -> bool:
    if kind is None:
        return True
    if kind is callable:
        return callable(value)
    return isinstance(value, kind)  # pyright: ignore[reportArgumentType]  (a class or a tuple of them here)


def expect(owner: object, path: str, kind: Kind = None, *, own: bool = False) -> Any:
    """The object at ``owner.path`` (a dotted path), checked to be what the patch was written for.

    ``kind`` is what it must be: ``callable``, a class (or tuple of classes)
    it must be an instance of (``type`` for a class), or ``None`` for
    anything.  With ``own``, the last name is read from its owner's own
    namespace, as a class defines it: inherited attributes do not count and
    descriptors are not run (a static method is the ``staticmethod``).
    Anything else raises :class:`~gpushim.TargetMismatch` naming what was
    expected: ``warp.types.array defines no __init__``, ``warp.types has no
    strides_from_shape``, ``warp.optim.SGD is not a class``.
    """
    where = name_of(owner)
    *parents, last = path.split(".")
    for name in parents:
        owner = getattr(owner, name, _MISSING)
        if owner is _MISSING:
            raise TargetMismatch(f"{where} has no {name}")
        where = f"{where}.{name}"
    if own:
        try:
            found = vars(owner).get(last, _MISSING)
        except TypeError:
            found = _MISSING
    else:
        found = getattr(owner, last, _MISSING)
    if found is _MISSING:
        raise TargetMismatch(f"{where} {'defines' if own else 'has'} no {last}")
    if not _is(found, kind):
        raise TargetMismatch(f"{where}.{last} is not {_kind_name(kind)}")
    return found


def expect_same(found: object, expected: object, found_as: str, expected_as: str) -> None:
    """Raise TargetMismatch unless ``found`` is the object ``expected``, each named as messages say it.

    A patch that replaces one binding checks that the others it leaves
    alone are the same object (a dispatch table's entry and the method it
    holds, a module's ``numpy`` and NumPy): ``Adjoint.node_visitors[ast.Name]
    is not Adjoint.emit_Name``.
    """
    if found is not expected:
        raise TargetMismatch(f"{found_as} is not {expected_as}")


def expect_reads(function: object, *names: str) -> None:
    """Raise TargetMismatch unless the code of ``function`` reads each of ``names`` (its ``co_names``).

    A patch whose fix relies on what a function looks up (a global it
    replaces, an attribute it sets) checks that it still does:
    ``warp.types.array.__init__ does not read _ref``.
    """
    code = getattr(function, "__code__", None)
    if code is None:
        raise TargetMismatch(f"{name_of(function)} has no code to read")
    missing = [name for name in names if name not in code.co_names]
    if missing:
        raise TargetMismatch(f"{name_of(function)} does not read {', '.join(missing)}")


def expect_lines(target: object, *lines: str) -> None:
    """Raise TargetMismatch unless the source of ``target`` has each of ``lines``, compared stripped.

    ``target`` is a function or class, or a module, whose source is read
    from its loader, so that a module about to execute can be checked
    before a patch prepares it: ``nvidia.dali._autograph.pyct.gast_util has
    no line 'import pkg_resources'``.
    """
    try:
        source = _source_of(target)
    except Exception as error:
        raise TargetMismatch(f"the source of {name_of(target)} cannot be read: {error}") from None
    found = {line.strip() for line in (source or "").splitlines()}
    for line in lines:
        if line not in found:
            raise TargetMismatch(f"{name_of(target)} has no line {line!r}")


def _source_of(target: object) -> Optional[str]:
    import inspect

    if inspect.ismodule(target):
        # a module about to execute has its loader, an InspectLoader, and perhaps no file yet
        return target.__spec__.loader.get_source(target.__name__)  # pyright: ignore[reportOptionalMemberAccess, reportAttributeAccessIssue]
    return inspect.getsource(target)  # pyright: ignore[reportArgumentType]


class Parameters:
    """The parameters a patch expects a callable of its target to take, in order, with their defaults.

    ``Parameters("a", "axis", dtype=None)`` stands for ``f(a, axis, dtype=None)``:
    names given positionally have no default, keyword ones have the default
    given; every parameter can be passed by position or by name.

    ``bind(*args, **kwargs)`` returns a call's arguments in parameter order,
    defaults filled in, bound by Python itself as the target binds them, at
    the cost of one call of a Python function; it raises ``TypeError`` for a
    call the target would refuse to bind (a missing or unexpected argument,
    one given twice), which a wrapper passes on, so that the release raises
    its own message.
    """

    __slots__ = ("names", "defaults", "bind")

    def __init__(self, *names: str, **defaults: object) -> None:
        import keyword

        self.names = names + tuple(defaults)
        self.defaults = defaults
        for name in self.names:
            if not name.isidentifier() or keyword.iskeyword(name):
                raise ValueError(f"{name!r} is not a name a parameter can have")
            if name == "self":
                raise ValueError("leave self out, and check a method with check(..., method=True)")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"{self.names} names a parameter twice")
        self.bind: Callable[..., tuple] = self._binder()

    def __repr__(self) -> str:
        return f"Parameters({self})"

    def __str__(self) -> str:
        return ", ".join(
            name if name not in self.defaults else f"{name}={self.defaults[name]!r}" for name in self.names
        )

    def _binder(self) -> Callable[..., tuple]:
        """A function with these parameters that returns its arguments."""
        namespace: dict[str, Any] = {f"_default_{name}": value for name, value in self.defaults.items()}
        signature = ", ".join(f"{name}=_default_{name}" if name in self.defaults else name for name in self.names)
        returned = "".join(f"{name}, " for name in self.names)  # a tuple, also of one name or none
        exec(f"def bind({signature}):\n    return ({returned})", namespace)
        return namespace["bind"]

    def check(self, function: object, *, method: bool = False, leading: bool = False) -> None:
        """Raise :class:`~gpushim.TargetMismatch` unless ``function`` takes exactly these parameters.

        Same names in the same order, each taken by position or by name, with
        the same defaults.  ``method``: ``function`` is a method as its class
        defines it, whose first parameter (``self``) is not among these.
        ``leading``: these are only its first parameters, and more may follow.
        The parameters are read from the signature, or for a Cython function
        without one from the signature Cython embeds in its docstring.
        """
        found = _parameters_of(function)
        if found is None:
            raise TargetMismatch(f"{name_of(function)} has no signature that can be read")
        if method:
            found = found[1:]
        expected = [(name, self.defaults.get(name, _EMPTY)) for name in self.names]
        actual = found[: len(expected)] if leading else found
        if not _same(actual, expected):
            shown = ", ".join(_show(parameter) for parameter in found)
            more = " first" if leading else ""
            raise TargetMismatch(f"{name_of(function)} takes ({shown}), expected ({self}){more}")


class _Empty:
    """No default."""

    def __repr__(self) -> str:
        return "<no default>"


_EMPTY = _Empty()
_OTHER_KIND = object()  # a default for parameters that cannot be passed both by position and by name


def _show(parameter: tuple) -> str:
    name, default = parameter
    if default is _EMPTY:
        return name
    if default is _OTHER_KIND:
        return f"{name} (not positional-or-keyword)"
    return f"{name}={default!r}"


def _same(found: list, expected: list) -> bool:
    if len(found) != len(expected):
        return False
    for (name, default), (expected_name, expected_default) in zip(found, expected):
        if name != expected_name or type(default) is not type(expected_default):
            return False
        if default is not expected_default and not (default == expected_default):
            return False
    return True


def _parameters_of(function: Any) -> Optional[list]:
    """``(name, default)`` of each of ``function``'s parameters, ``_EMPTY`` for none; None where none can be read."""
    import inspect

    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return _embedded_parameters(function)
    ordinary = (inspect.Parameter.POSITIONAL_OR_KEYWORD,)
    return [
        (name, _EMPTY if parameter.default is parameter.empty else parameter.default)
        if parameter.kind in ordinary
        else (name, _OTHER_KIND)
        for name, parameter in signature.parameters.items()
    ]


def _embedded_parameters(function: object) -> Optional[list]:
    """The parameters of the signature Cython's ``embedsignature`` puts first in a docstring.

    ``array(obj, dtype=None, bool copy=True, order=u'K')``, for a method
    ``_ndarray_base.get(self, stream=None, ...)``: a C type before a name is
    dropped, defaults must be Python literals.
    """
    import ast

    doc, name = getattr(function, "__doc__", None), getattr(function, "__name__", None)
    if not isinstance(doc, str) or not isinstance(name, str):
        return None
    head = doc.partition("(")[0]  # a method's is qualified by its class: "_ndarray_base.get(self, ...)"
    if head != name and not head.endswith(f".{name}"):
        return None
    text = doc[len(head) + 1 : doc.find(")")]
    parameters = []
    for part in text.split(",") if text.strip() else ():
        declaration, equals, default = part.partition("=")
        words = declaration.split()
        if not words or not words[-1].isidentifier():
            return None
        if not equals:
            parameters.append((words[-1], _EMPTY))
            continue
        try:
            parameters.append((words[-1], ast.literal_eval(default.strip())))
        except (ValueError, SyntaxError):
            return None
    return parameters
