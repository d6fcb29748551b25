"""``Tape.zero()`` never clears the gradients of arrays inside nested structs (Warp 1.x up to 1.8.0).

What breaks.  When ``Tape.backward`` meets a struct argument,
``Tape.get_adjoint`` builds the struct's adjoint field by field: array fields
become their ``grad`` arrays, and each is remembered in ``tape.gradients`` so
that ``tape.zero()`` clears it.  A field whose type is itself a struct is
copied from the primal instead of being taken apart the same way, so the
arrays one level down or deeper are never remembered: ``tape.zero()`` leaves
their gradients alone and they pile up from one iteration to the next (2, 4,
6 where 2, 2, 2 is right).  No error, only wrong gradients.
``get_adjoint``'s struct branch is the same from 1.0.0 to 1.8.0.

Fixed upstream.  NVIDIA/warp GH-807, fixed by NVIDIA/warp@34af0fdba (1.8.1;
562eb30d0 on main, in 1.9.0), which makes it recurse into struct fields.

How the fix works.  The backport wraps ``Tape.get_adjoint``.  Anything but a
struct instance, and any struct without a struct field, goes to Warp's own
method, which is right for them; that is one ``isinstance`` check on the
common path.  A struct with a struct field gets the adjoint 1.8.1 builds, in
the same order: a new instance of the struct, each array field's gradient
recorded and set, each struct field replaced by the adjoint of that field got
through ``tape.get_adjoint`` again (so the patched method, at any depth),
every other field copied, and the struct itself recorded with its adjoint
last.  ``tape.gradients`` then holds what 1.8.1's holds, in the same order,
and ``Tape.zero()``, unchanged, clears the nested arrays as it clears the
outer ones.

Not backported.  1.8.1's other changes.

The probe.  A two-level struct over an array whose gradient is 5; a tape is
asked for the struct's adjoint as ``backward`` would, then ``tape.zero()``:
the gradient must be 0.  No kernel is compiled.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="warp.tape_zero_nested_struct",
    affected="<1.8.1",
    fixed_in="1.8.1",
    issue="NVIDIA/warp GH-807",
    fix="NVIDIA/warp@34af0fdba (562eb30d0 on main)",
    summary="Tape.zero() leaves the gradients of arrays in nested structs, so they accumulate across iterations.",
)


_GET_ADJOINT = Parameters("a")  # after self


@patch.applier
def _apply(warp, journal):
    struct_instance = expect(warp, "codegen.StructInstance", type)
    struct_type = expect(warp, "codegen.Struct", type)
    array_type = expect(warp, "types.array", type)
    tape = expect(warp, "Tape", type)
    _GET_ADJOINT.check(expect(tape, "get_adjoint", callable, own=True), method=True)

    def nested_adjoint(tape, instance):
        """The adjoint of a struct instance, with its struct fields taken apart as 1.8.1 does."""
        cls = instance._cls
        adjoint = cls()
        for name, _ in cls.ctype._fields_:
            if name.startswith("_"):
                continue
            field_type = cls.vars[name].type
            if isinstance(field_type, array_type):
                array = getattr(instance, name)
                grad = None
                if array.grad:
                    grad = tape.gradients[array] = array.grad
                setattr(adjoint, name, grad)
            elif isinstance(field_type, struct_type):
                setattr(adjoint, name, tape.get_adjoint(getattr(instance, name)))
            else:
                setattr(adjoint, name, getattr(instance, name))
        tape.gradients[instance] = adjoint
        return adjoint

    def get_adjoint(wrapped, instance, args, kwargs):
        try:
            (a,) = _GET_ADJOINT.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
        if not isinstance(a, struct_instance) or not any(
            isinstance(var.type, struct_type) for var in a._cls.vars.values()
        ):
            return wrapped(*args, **kwargs)
        return nested_adjoint(instance, a)

    journal.wrap(tape, "get_adjoint", get_adjoint)


@patch.prober
def _probe():
    """A gradient of 5 on an array one struct down must read 0 after ``tape.zero()``."""
    import warp

    warp.config.quiet = True
    warp.init()
    inner_type = warp.struct(type("Inner", (), {"__annotations__": {"a": warp.array(dtype=warp.float32)}}))
    outer_type = warp.struct(type("Outer", (), {"__annotations__": {"inner": inner_type}}))
    outer = outer_type()
    outer.inner = inner_type()
    outer.inner.a = warp.ones(2, dtype=warp.float32, device="cpu", requires_grad=True)
    outer.inner.a.grad.fill_(5.0)
    tape = warp.Tape()
    tape.get_adjoint(outer)
    tape.zero()
    left = outer.inner.a.grad.numpy().tolist()
    if left != [0.0, 0.0]:
        return f"tape.zero() leaves the gradient of an array inside a nested struct at {left}, not [0.0, 0.0]"
    return None
