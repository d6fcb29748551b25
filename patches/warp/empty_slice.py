"""Empty slices of a Warp array (``a[2:2]``, ``a[:0]``) raise ``RuntimeError: Invalid indexing`` (Warp 1.x to 1.9.0).

What breaks.  ``warp.array.__getitem__`` checks every slice after resolving
negative bounds, and two of its checks reject a slice that selects nothing:
``stop < 1`` and ``stop <= start``.  So ``a[2:2]``, ``a[:0]``, ``a[-1:-1]``
and ``a[1:1, :0]`` raise ``RuntimeError: Invalid indexing in slice: 2:2:1``
where NumPy gives an empty view.  The checks date from the slicing of
NVIDIA/warp@ffaaeb64e (0.7.0) and are the same in every 1.x release up to
1.9.0.

Fixed upstream.  NVIDIA/warp GH-958, fixed by NVIDIA/warp@09f9ad489 (1.9.1),
which relaxes the checks to ``stop < 0`` and ``stop < start``; the rest of the
method already computes an empty dimension (a shape of 0, the stride times the
step, the offset of ``start``).  A start at or past the end (``a[3:3]`` of
three elements) still raises in 1.9.1, as before.  Checked: ``git tag
--contains 09f9ad489`` starts at v1.9.1; 1.0.0 and 1.9.0 raise, 1.9.1 gives
shape ``(0,)``.

How the fix works.  The backport runs 1.9.1's two comparisons in the
release's own method (``gpushim.source.recompiled``): it reads the source of
``array.__getitem__`` from the installed Warp, requires exactly one ``stop <
1 or stop > self.shape[idx]`` and one ``stop <= start``, turns them into
``stop < 0 or ...`` and ``stop < start`` in the syntax tree, and compiles
the method again in ``warp.types``'s namespace, under its file name and
line numbers, so tracebacks point at Warp's source.  Every other
statement is the release's, so views, gradients, indexed arrays and error
messages are those of 1.9.1 wherever the release's method was 1.9.1's in
all but those comparisons (every 1.x since 1.0).  ``__getitem__`` is
wrapped to call the recompiled method.  Anything else in place of those
comparisons, or a method whose source cannot be read, is a TargetMismatch.

Not backported.  1.9.1's other changes.  Empty slices reach kernels as arrays
of size 0, as in 1.9.1.  An empty view of a CUDA array keeps an address, so
its ``.numpy()`` copies it to the host, into an array without one, whose
``__array_interface__`` NumPy refuses: ``ValueError: setting an array element
with a sequence``, in 1.9.1 as with the patch.  Neither ``numpy()`` nor
``__array_interface__`` changed that from 0.10.0 to 1.16.0 and upstream's main
of August 2026, so there is no fix to backport.

The probe.  A three-element CPU array sliced as ``a[1:1]`` and ``a[:0]``;
both must give shape ``(0,)``.
"""

from __future__ import annotations

from gpushim import Patch, TargetMismatch, expect

patch = Patch(
    id="warp.empty_slice",
    affected="<1.9.1",
    fixed_in="1.9.1",
    issue="NVIDIA/warp GH-958",
    fix="NVIDIA/warp@09f9ad489",
    summary="Empty slices of a wp.array (a[2:2], a[:0]) raise RuntimeError: Invalid indexing in slice.",
)


class _RelaxEmptySliceChecks:
    """Rewrites ``stop < 1`` as ``stop < 0`` and ``stop <= start`` as ``stop < start``, counting each."""

    def __init__(self) -> None:
        self.rewritten = {"stop < 1": 0, "stop <= start": 0}

    def visit(self, tree):
        import ast

        for node in ast.walk(tree):
            if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and _is_name(node.left, "stop")):
                continue
            (op,), (right,) = node.ops, node.comparators
            if isinstance(op, ast.Lt) and isinstance(right, ast.Constant) and right.value == 1:
                node.comparators = [ast.copy_location(ast.Constant(0), right)]
                self.rewritten["stop < 1"] += 1
            elif isinstance(op, ast.LtE) and _is_name(right, "start"):
                node.ops = [ast.Lt()]
                self.rewritten["stop <= start"] += 1
        return tree


def _is_name(node, name: str) -> bool:
    import ast

    return isinstance(node, ast.Name) and node.id == name


def _relaxed_checks(tree) -> None:
    """1.9.1's checks of a slice's stop in the syntax tree of ``array.__getitem__``, each found exactly once."""
    rewriter = _RelaxEmptySliceChecks()
    rewriter.visit(tree)
    if rewriter.rewritten != {"stop < 1": 1, "stop <= start": 1}:
        raise TargetMismatch(f"array.__getitem__ checks a slice's stop otherwise than 1.9.0: {rewriter.rewritten}")


@patch.applier
def _apply(warp, journal):
    import types

    from gpushim.source import recompiled

    array = expect(warp, "types.array", type)
    getitem = expect(array, "__getitem__", types.FunctionType, own=True)
    relaxed = recompiled(getitem, _relaxed_checks)

    def getitem_wrapper(wrapped, instance, args, kwargs):
        if instance is None:
            return relaxed(*args, **kwargs)
        return relaxed(instance, *args, **kwargs)

    journal.wrap(array, "__getitem__", getitem_wrapper)


@patch.prober
def _probe():
    """``a[1:1]`` and ``a[:0]`` of a three-element CPU array must have shape ``(0,)``."""
    import warp

    warp.config.quiet = True
    warp.init()
    a = warp.zeros(3, dtype=warp.float32, device="cpu")
    for key, text in ((slice(1, 1), "a[1:1]"), (slice(None, 0), "a[:0]")):
        try:
            shape = a[key].shape
        except Exception as error:
            return f"{text} of a three-element array raises {type(error).__name__}: {error}"
        if shape != (0,):
            return f"{text} of a three-element array has shape {shape}, not (0,)"
    return None
