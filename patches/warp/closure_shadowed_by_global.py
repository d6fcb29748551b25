"""A kernel reads a global instead of its closure's variable of the same name (Warp 1.x up to 1.3.1).

What breaks.  A kernel defined inside a function may use that function's
``wp.constant`` values, types and Warp functions (closures work since
0.7/0.8).  Warp's code generator resolves a bare name (``Adjoint.emit_Name``)
by looking in the kernel function's globals first and in its closure only
when the global is missing or None, the opposite of Python's own rule: with a
module-level ``SHADOWED = wp.constant(17)`` and a local ``SHADOWED =
wp.constant(42)``, the kernel closing over the local writes 17.
``Adjoint.get_constant_references``, which collects the constants a module's
hash covers (from 1.2.0), makes the same mistake, so the hash follows the
global, not the value the kernel should use.  ``Adjoint.resolve_path``
(attribute paths and calls) lets the closure win but reads every cell of the
closure, so one that is not filled (a variable deleted, or assigned after the
kernel is built) fails the build with ``ValueError: Cell is empty``.

Fixed upstream.  NVIDIA/warp@fed821d01 (1.3.2, "Fix precedence of closure
constants over global constants") resolves all three through one lookup: the
name's own closure cell if it is a free variable of the kernel function and
the cell is filled, else the globals.  Checked: ``git tag --contains
fed821d01`` starts at v1.3.2; 1.0.0 and 1.3.1 write 17, 1.3.2 writes 42.

How the fix works.  The backport leaves Warp's three methods in charge and
changes only what they see.  For an adjoint whose function has free
variables, the released method runs on a stand-in for the adjoint whose
``func`` resolves names as 1.3.2 does: its globals are the closure's filled
cells in front of the real globals, and it has no closure of its own to fall
back on.  Everything else the method reads or calls is the adjoint's own, so
constants, errors and their messages are those of the release being patched.
``emit_Name`` is reached through ``Adjoint.node_visitors`` as well as the
method, so the wrapper is installed in both places.

Warp names built modules, in memory and in its kernel cache, by a hash of
their source and of the constants ``get_constant_references`` reports (1.0
and 1.1: of every ``wp.constant`` made).  With that method corrected, a
closure's constant is hashed by its own value; and since a closure can also
shadow a type or a Warp function, which are not hashed,
``Module.hash_module`` also mixes this patch into the hash of every module
that holds, or depends on, a kernel or function with a free variable that a
global of the same name shadows.  Builds made with and without the patch
therefore live apart in both caches.

Not backported.  A module already loaded before the patch was applied keeps
its code until Warp loads it again (a new process, a kernel added to it), and
``unpatch()`` does not unload modules built while patched.  In
``resolve_path`` a name bound to None is not looked up among Warp's own
names, as 1.3.2 would.  1.3.2's other changes are not backported.

The probe.  On the CPU, a kernel that closes over ``SHADOWED = 42`` while the
probe's module holds a global ``SHADOWED = 17``; it must write 42.
"""

from __future__ import annotations

from gpushim import Patch, expect, expect_same
from gpushim.patches.warp._codegen import salted

patch = Patch(
    id="warp.closure_shadowed_by_global",
    affected="<1.3.2",
    fixed_in="1.3.2",
    issue="NVIDIA/warp 1.3.2 changelog: precedence of closure constants over global constants",
    fix="NVIDIA/warp@fed821d01",
    summary="A kernel uses a module-level global instead of the closure variable of the same name it was defined with.",
)

# Mixed into the hash of every module this patch may generate differently;
# a change to how names are resolved must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.closure_shadowed_by_global 1"

SHADOWED = 17  # the probe's global, shadowed by its kernel's closure


class _ClosureFirst:
    """An adjoint as Warp's name lookups see it in 1.3.2: its function's closure before its globals."""

    __slots__ = ("_adjoint", "func")

    def __init__(self, adjoint, func):
        self._adjoint = adjoint
        self.func = func

    def __getattr__(self, name):
        return getattr(self._adjoint, name)


class _Resolving:
    """What Warp reads of a kernel function to resolve a name: ``__globals__``, ``__code__`` and ``__closure__``."""

    __slots__ = ("__globals__", "__code__", "__closure__")

    def __init__(self, names):
        self.__globals__ = names
        self.__code__ = _NoFreeVariables
        self.__closure__ = None


class _NoFreeVariables:
    co_freevars = ()


def _filled_cells(func) -> dict:
    cells = {}
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            cells[name] = cell.cell_contents
        except ValueError:  # not filled yet: 1.3.2 looks in the globals
            pass
    return cells


def _closure_first(adjoint) -> _ClosureFirst:
    import collections

    func = adjoint.func
    return _ClosureFirst(adjoint, _Resolving(collections.ChainMap(_filled_cells(func), func.__globals__)))


def _shadows(func) -> bool:
    """Whether a global of ``func`` has the name of one of its free variables."""
    code, globals = getattr(func, "__code__", None), getattr(func, "__globals__", {})
    return any(globals.get(name) is not None for name in getattr(code, "co_freevars", ()))


def _closure_first_wrapper(original):
    """A wrapt wrapper running ``original``, a method of ``Adjoint``, on a closure-first stand-in of the adjoint.

    Adjoints of functions without free variables have nothing to shadow and go
    to Warp's method as they are.
    """

    def wrapper(wrapped, instance, args, kwargs):
        adj = instance if instance is not None else (args[0] if args else None)
        if not getattr(getattr(getattr(adj, "func", None), "__code__", None), "co_freevars", ()):
            return wrapped(*args, **kwargs)
        return original(_closure_first(adj), *(args if instance is not None else args[1:]), **kwargs)

    return wrapper


@patch.applier
def _apply(warp, journal):
    import ast

    adjoint, module = expect(warp, "codegen.Adjoint", type), expect(warp, "context.Module", type)
    for owner, name in ((adjoint, "emit_Name"), (adjoint, "resolve_path"), (module, "hash_module")):
        expect(owner, name, callable, own=True)
    visitors = getattr(adjoint, "node_visitors", {})
    expect_same(
        visitors.get(ast.Name), vars(adjoint)["emit_Name"], "Adjoint.node_visitors[ast.Name]", "Adjoint.emit_Name"
    )

    # get_constant_references comes with 1.2.0; before it, Warp hashes every wp.constant ever made
    methods = [name for name in ("emit_Name", "resolve_path", "get_constant_references") if name in vars(adjoint)]
    for name in methods:
        installed = journal.wrap(adjoint, name, _closure_first_wrapper(vars(adjoint)[name]))
        if name == "emit_Name":
            journal.replace_item(adjoint.node_visitors, ast.Name, installed)

    def functions_of(warp_module):
        for table in (getattr(warp_module, "kernels", {}), getattr(warp_module, "functions", {})):
            yield from (getattr(kernel_or_function, "func", None) for kernel_or_function in table.values())

    def shadowing(warp_module) -> bool:
        """Whether the module, or one it depends on, holds a function whose free variable a global shadows."""
        seen, pending = set(), [warp_module]
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            if any(_shadows(func) for func in functions_of(current)):
                return True
            pending.extend(getattr(current, "references", ()))
        return False

    def hash_module(wrapped, instance, args, kwargs):
        digest = wrapped(*args, **kwargs)
        return salted(digest, _HASH_SALT) if shadowing(instance) else digest

    journal.wrap(module, "hash_module", hash_module)


@patch.prober
def _probe():
    """A kernel closing over ``SHADOWED = 42``, with a global ``SHADOWED = 17`` beside it, must write 42."""
    import warp

    warp.config.quiet = True
    warp.init()

    def kernel_closing_over_42():
        SHADOWED = warp.constant(42)

        def write(out):
            out[0] = SHADOWED

        write.__annotations__ = {"out": warp.array(dtype=int)}  # not a string: Warp 1.3 evaluates those in globals
        return warp.kernel(write)

    out = warp.zeros(1, dtype=int, device="cpu")
    warp.launch(kernel_closing_over_42(), dim=1, inputs=[out], device="cpu")
    value = int(out.numpy()[0])
    if value != 42:
        return f"a kernel closing over SHADOWED = 42 beside a global SHADOWED = 17 writes {value}, not 42"
    return None
