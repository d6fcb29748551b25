"""``while flags[i]:`` fails to compile: the loop compares an element's address with ``false`` (Warp 1.x up to 1.3.3).

What breaks.  Warp generates a ``while`` loop's test as ``if ((c) == false)
goto end``, with ``c`` the value ``Adjoint.begin_while`` evaluates.  A test
that indexes an array (``flags[i]``) or reads a struct's field gives a
reference, the element's address, and nothing reads it: the C++ compiler
refuses ``comparison between pointer and integer ('wp::int32 *' and
'bool')`` and the module does not build.  Every 1.x release before 1.4.0.

Fixed upstream.  NVIDIA/warp@a14f627ed ("Fix conditional evaluation in
``while`` statement"; ``git tag --contains``: v1.4.0 first), which reads
the test's value before comparing it.  Run: 1.0.2 and 1.3.3 fail to
compile ``while flags[i]:``; 1.4.0 runs it.

How the fix works.  ``Adjoint.emit_While`` and ``Adjoint.eval`` are wrapped
(``_codegen.load_operands``): while a ``while`` loop is generated, the value
of its test goes through Warp's own ``Adjoint.load`` before ``begin_while``
compares it, as in 1.4.0; a test that is no reference reads as it did.  The
module hash of every module with a ``while`` loop differs while the patch is
applied, in the kernel cache directory too (``_codegen.key_builds_apart``):
a process without gpushim sharing the cache fails as released, and one with
it never takes a build from the other.

Not backported.  1.4.0's other changes to loops.

The probe.  ``while flags[i]: flags[i] = flags[i] - 1`` on the CPU, counting
the turns from 3: it must build and give 3.
"""

from __future__ import annotations

from gpushim import Patch, expect
from gpushim.patches.warp._codegen import codegen_and_context, key_builds_apart, load_operands

patch = Patch(
    id="warp.while_condition_load",
    affected="<1.4.0",
    fixed_in="1.4.0",
    issue="Warp 1.4.0 changelog: conditional evaluation in while statements",
    fix="NVIDIA/warp@a14f627ed",
    summary="while flags[i]: fails to compile, comparing the element's address with false.",
)

# Mixed into the hash of every module this patch may generate differently;
# a change to the code below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.while_condition_load 1"


def _test(node):
    return lambda operand, value: operand is node.test


@patch.applier
def _apply(warp, journal):
    import ast

    codegen, context = codegen_and_context(warp)
    load_operands(journal, expect(codegen, "Adjoint", type), ast.While, "emit_While", _test)
    key_builds_apart(context, journal, _HASH_SALT, _changes)


def _changes(tree) -> bool:
    import ast

    return any(isinstance(node, ast.While) for node in ast.walk(tree))


@patch.prober
def _probe():
    """``while flags[i]:`` must build and count 3 turns.

    The kernel is defined anew at each call, which makes Warp hash its module
    again, so the answer follows the patch's current state; it runs on the CPU.
    """
    import warp

    warp.config.quiet = True
    warp.init()

    def count_down(flags, out):
        i = warp.tid()
        turns = warp.int32(0)
        while flags[i]:
            flags[i] = flags[i] - 1
            turns = turns + 1
        out[i] = turns

    count_down.__annotations__ = {"flags": warp.array(dtype=int), "out": warp.array(dtype=int)}
    kernel = warp.kernel(count_down)
    flags = warp.array([3], dtype=int, device="cpu")
    out = warp.zeros(1, dtype=int, device="cpu")
    try:
        warp.launch(kernel, dim=1, inputs=[flags, out], device="cpu")
    except Exception as error:  # noqa: BLE001 - the release's build failure is the bug
        return f"while flags[i]: fails to build: {type(error).__name__}: {error}"
    turns = out.numpy().tolist()
    return None if turns == [3] else f"while flags[i]: counts {turns} turns, not [3]"
