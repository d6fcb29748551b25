"""A struct keeps an array assigned to it alive, but not the array's ``grad`` (Warp 1.x before 1.7.2).

What breaks.  ``StructInstance.__setattr__`` copies an array's ``array_t``
into the struct's ctype, gradient pointer included, and keeps the array
itself as the Python attribute.  The gradient is owned only by
``array.grad``: once the user sets ``s.a.requires_grad = False`` or replaces
``s.a.grad``, the gradient array is freed while the struct's ctype still
points at it, and the next backward launch over the struct writes into freed
memory without an error (``warp.sim`` hits it).  Every 1.x release before
1.7.2 has it.

Fixed upstream.  NVIDIA/warp GH-720, fixed by NVIDIA/warp@d9c4f3f2c (``git
tag --contains``: v1.7.2 first), which has the struct instance hold the
gradient in a private attribute ``_<field>_grad`` whenever an array is
assigned to an array field.  Running 1.0.0 and 1.7.1 shows the gradient
collected, 1.7.2 keeps it.

How the fix works.  The wrapper lets ``__setattr__`` run as released (its
checks and messages included) and then, where the field is an array field and
the value an array, stores ``value.grad`` under the same private attribute
name 1.7.2 uses, so code that looks for it finds it.  Assigning ``None``
leaves an earlier gradient in place, as in 1.7.2.  Nothing here is compiled
into kernels; Warp's module hashes and kernel cache are unaffected.

Not backported.  1.7.2's note in docs/limitations.rst and its tests.

The probe.  An array with ``requires_grad=True`` assigned to a struct field,
then ``requires_grad`` turned off: the gradient the struct's ctype points at
must not have been collected.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="warp.struct_array_grad",
    affected="<1.7.2",
    fixed_in="1.7.2",
    issue="NVIDIA/warp GH-720",
    fix="NVIDIA/warp@d9c4f3f2c",
    summary="Assigning an array to a struct field does not keep the array's grad alive while the struct points at it.",
)


_SETATTR = Parameters("name", "value")  # after self


@patch.applier
def _apply(warp, journal):
    struct_instance = expect(warp, "codegen.StructInstance", type)
    _SETATTR.check(expect(struct_instance, "__setattr__", callable, own=True), method=True)
    array = expect(warp, "types.array", type)

    def setattr_keeping_grad(wrapped, struct, args, kwargs):
        result = wrapped(*args, **kwargs)
        name, value = _SETATTR.bind(*args, **kwargs)
        if value is not None and isinstance(struct._cls.vars[name].type, array):
            object.__setattr__(struct, f"_{name}_grad", value.grad)
        return result

    journal.wrap(struct_instance, "__setattr__", setattr_keeping_grad)


@patch.prober
def _probe():
    """A struct's array gradient must outlive ``requires_grad = False`` on the array."""
    import gc
    import weakref

    import warp

    warp.config.quiet = True
    warp.init()
    holder = warp.struct(type("Holder", (), {"__annotations__": {"a": warp.array(dtype=warp.float32)}}))()
    holder.a = warp.zeros(3, dtype=warp.float32, device="cpu", requires_grad=True)
    grad = weakref.ref(holder.a.grad)
    holder.a.requires_grad = False
    gc.collect()
    if grad() is None:
        return "a struct's array gradient is collected after requires_grad = False while the struct points at it"
    return None
