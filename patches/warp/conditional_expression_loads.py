"""A conditional expression reads both of its branches' array elements (Warp 1.8.0 to 1.11.0).

What breaks.  Warp generates ``a if cond else b`` as both branches, each
under its side of an ``if``, then ``where(cond, a, b)``.  A branch that
indexes an array, ``arr[idx]``, gives a reference to the element, and the
read through it happens in ``where``, after both branches: the element is
read whichever way the condition goes.  ``-1.0 if idx < 0 else arr[idx]``
reads ``arr[-2**30]`` for ``idx = -2**30``: a segmentation fault on the CPU,
an illegal address on CUDA, or a silent read out of bounds.  Warp compiles
conditional expressions from 1.8.0; 1.7.2 refuses them.

Fixed upstream.  NVIDIA/warp#1094, fixed by NVIDIA/warp@97d01a1db
(``git tag --contains``: v1.11.1 first; 41402f3ad on main, in 1.12.0),
which reads each branch's value inside its side of the ``if``.  Run: 1.8.0
and 1.11.0 crash with ``idx = -2**30``, 1.11.1 gives ``-1.0``.

How the fix works.  ``Adjoint.emit_IfExp`` and ``Adjoint.eval`` are wrapped
(``_codegen.load_operands``): while a conditional expression is generated,
the value of each branch, evaluated inside its side of the ``if``, goes
through Warp's own ``Adjoint.load`` before the branch ends, as in 1.11.1.  Where the
condition is a constant, Warp evaluates only one branch and reads nothing
more; that stays as released, as in 1.11.1.  The module hash of every
adjoint with a conditional expression differs while the patch is applied, in
memory and in the kernel cache directory (``_codegen.key_builds_apart``).

Not backported.  1.11.1's tests.  ``unpatch()`` leaves a module already
loaded while patched as it is until Warp hashes it again.

The probe.  The C++ Warp generates for ``out[0] = -1.0 if idx < 0 else
arr[idx]`` on the CPU, not built: the branch that takes ``arr[idx]``'s
address must read it before the branch ends.
"""

from __future__ import annotations

from gpushim import Patch, expect
from gpushim.patches.warp._codegen import codegen_and_context, key_builds_apart, load_operands

patch = Patch(
    id="warp.conditional_expression_loads",
    affected=">=1.8.0,<1.11.1",
    fixed_in="1.11.1",
    issue="NVIDIA/warp#1094",
    fix="NVIDIA/warp@97d01a1db (41402f3ad on main)",
    summary="a if cond else arr[i] reads arr[i] whichever way cond goes: a crash where i is out of bounds.",
)

# Mixed into the hash of every adjoint this patch may generate differently;
# a change to the code below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.conditional_expression_loads 1"


def _branches(node):
    """Select the branches' values of ``node``, an ``ast.IfExp``, unless its condition is a constant."""
    branching = True

    def selects(operand, value) -> bool:
        nonlocal branching
        if operand is node.test:
            branching = getattr(value, "constant", None) is None
            return False
        return branching and (operand is node.body or operand is node.orelse)

    return selects


def _changes(tree) -> bool:
    import ast

    return any(isinstance(node, ast.IfExp) for node in ast.walk(tree))


@patch.applier
def _apply(warp, journal):
    import ast

    codegen, context = codegen_and_context(warp)
    adjoint = expect(codegen, "Adjoint", type)
    load_operands(journal, adjoint, ast.IfExp, "emit_IfExp", _branches)
    key_builds_apart(context, journal, _HASH_SALT, _changes)


@patch.prober
def _probe():
    """The branch ``arr[idx]`` of ``-1.0 if idx < 0 else arr[idx]`` must read the element inside itself.

    The probe reads the C++ that Warp generates for the CPU, without building
    or running it: the release's code dereferences an address its branch may
    not have taken, and what that does (a crash, a wrong value) depends on
    memory, while the contract's probes must finish.  The kernel is defined
    anew at each call, so the code follows the patch's current state.
    """
    import re

    import warp

    from gpushim.patches.warp._codegen import codegen_and_context

    warp.config.quiet = True
    warp.init()

    def guarded_read(arr, idx, out):
        out[0] = -1.0 if idx < 0 else arr[idx]

    guarded_read.__annotations__ = {"arr": warp.array(dtype=float), "idx": int, "out": warp.array(dtype=float)}
    context = codegen_and_context(warp)[1]
    try:
        kernel = warp.kernel(guarded_read)
        source = context.ModuleBuilder(kernel.module, {**kernel.module.options, "output_arch": None}).codegen("cpu")
    except Exception as error:
        if "IfExp" in str(error):  # "unsupported construct" to 1.2, "not supported" from 1.3
            return None  # before 1.8.0 Warp refuses conditional expressions: no such bug
        raise
    forward = source[source.index("// forward") :]
    branches = re.findall(r"if \(!?var_\w+\) \{\n(.*?)\n\s*\}", forward, flags=re.DOTALL)
    if any("wp::address(" in branch and "wp::load(" not in branch for branch in branches):
        return "-1.0 if idx < 0 else arr[idx] takes arr[idx]'s address in its branch and reads it after both"
    return None
