"""Overloads that differ only in an array's dtype resolve to the first one built (Warp 1.4.0 and 1.4.1).

What breaks.  ``warp.types.types_equal`` calls two array types equal when
they are the same class, whatever their dtypes.  A generic ``@wp.func``
taking ``wp.array(dtype=Any)``, called from a generic kernel launched with
``vec3`` arrays and then with ``float`` arrays, resolves the second call to
the ``vec3`` overload: Warp refuses the kernel ("Error while parsing
function") where 1.3.3 and 1.4.2 run it.

Fixed upstream.  NVIDIA/warp@28b5d561d ("Fix incorrect user function
overloading", on main: v1.5.0), cherry-picked as 71425044b (``git tag
--contains``: v1.4.2 first): array types are equal only if their dtypes are.
Run: 1.3.3 and 1.4.2 give ``[4, 6, 8]`` and ``12``; 1.4.0 and 1.4.1 raise.

How the fix works.  ``types_equal`` is wrapped where Warp's code generator
reads it: on ``warp.types``, and on ``warp.codegen``, ``warp.builtins`` and
``warp.fabric``, which ``import warp`` loads and which bind it by ``from
warp.types import *``.  For two arrays of one class
whose dtypes differ (by the release's own ``types_equal`` of the dtypes), the
answer is what the rest of 1.4.2's function gives them, Warp's own
``scalars_equal``; every other call is the release's.  Which overload a call
resolves to is not in Warp's module hash, and a module Warp finds built in
its kernel cache is not generated again: so the hash of every module covers
the patch while it is applied (``_codegen.key_builds_apart``), and each
module is built once more, apart from the release's builds.

Not backported.  ``warp.fem`` and ``warp.sparse`` bind ``types_equal`` too,
when the user imports them; they compare types in Python, not overloads,
and keep the release's.

The probe.  Upstream's kernel on the CPU, launched with ``vec3`` arrays and
then ``float`` ones: it must give ``12`` for the second.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect
from gpushim.patches.warp._codegen import codegen_and_context, key_builds_apart

patch = Patch(
    id="warp.overload_array_dtype",
    affected=">=1.4.0,<1.4.2",
    fixed_in="1.4.2",
    issue="Warp 1.4.2 changelog: incorrect user function overloading",
    fix="NVIDIA/warp@71425044b (28b5d561d on main)",
    summary="Generic function overloads that differ only in an array's dtype resolve to the first one built.",
)

# Mixed into the hash of every adjoint this patch may generate differently;
# a change to the code below must change it, so that older builds are not reused.
_HASH_SALT = b"gpushim warp.overload_array_dtype 1"

_TYPES_EQUAL = Parameters("a", "b", match_generic=False)


def _every(tree) -> bool:
    """Any call of a generic function may resolve to another overload: every adjoint is keyed apart."""
    return True


@patch.applier
def _apply(warp, journal):
    types = expect(warp, "types", type(warp))
    released = expect(types, "types_equal", callable, own=True)
    _TYPES_EQUAL.check(released)
    scalars_equal = expect(types, "scalars_equal", callable, own=True)
    is_array = expect(types, "is_array", callable, own=True)
    owners = [types, *(expect(warp, name, type(warp)) for name in ("codegen", "builtins", "fabric"))]

    def types_equal(wrapped, instance, args, kwargs):
        try:
            a, b, match_generic = _TYPES_EQUAL.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
        if is_array(a) and type(a) is type(b) and not wrapped(a.dtype, b.dtype, match_generic=match_generic):
            return scalars_equal(a, b, match_generic)
        return wrapped(*args, **kwargs)

    journal.wrap(owners, "types_equal", types_equal)
    key_builds_apart(codegen_and_context(warp)[1], journal, _HASH_SALT, _every)


@patch.prober
def _probe():
    import typing

    import numpy
    import warp

    warp.config.quiet = True
    warp.init()

    def doubled(b, i):
        return b[i] * 2.0

    doubled.__annotations__ = {"b": warp.array(dtype=typing.Any), "i": int}
    doubled = warp.func(doubled)

    def overloaded(a, b):
        i = warp.tid()
        a[i] = doubled(b, i)

    overloaded.__annotations__ = {"a": warp.array(dtype=typing.Any), "b": warp.array(dtype=typing.Any)}
    kernel = warp.kernel(overloaded)
    # From float32 NumPy arrays, which even Warp 1.2 under NumPy 2 converts without a copy.
    vectors = [warp.array(numpy.array([[2.0, 3.0, 4.0]], numpy.float32), dtype=warp.vec3, device="cpu")] * 2
    warp.launch(kernel, dim=1, inputs=vectors, device="cpu")
    a, b = (warp.array(numpy.array([value], numpy.float32), dtype=float, device="cpu") for value in (5.0, 6.0))
    try:
        warp.launch(kernel, dim=1, inputs=[a, b], device="cpu")
    except Exception as error:  # noqa: BLE001 - the release's refusal is the bug
        return f"a float overload after a vec3 one is refused: {type(error).__name__}"
    result = a.numpy().tolist()
    return None if result == [12.0] else f"the float overload gives {result}, not [12.0]"
