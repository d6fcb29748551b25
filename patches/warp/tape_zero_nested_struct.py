"""``Tape.zero()`` never clears the gradients of arrays inside nested structs (Warp 1.x up to 1.8.0).

When ``Tape.backward`` meets a struct argument, ``Tape.get_adjoint`` builds the
struct's adjoint field by field: array fields become their ``grad`` arrays, and
each is remembered in ``tape.gradients`` so that ``tape.zero()`` clears it.  A
field whose type is itself a struct is copied from the primal instead of being
taken apart the same way, so the arrays one level down or deeper are never
remembered: ``tape.zero()`` leaves their gradients alone and they pile up from
one iteration to the next (2, 4, 6 where 2, 2, 2 is right; NVIDIA/warp GH-807).
No error, only wrong gradients.  ``get_adjoint``'s struct branch is the same
from 1.0.0 to 1.8.0; NVIDIA/warp@34af0fdba (1.8.1; 562eb30d0 on main, in 1.9.0)
makes it recurse into struct fields.

The backport wraps ``Tape.get_adjoint``.  Anything but a struct instance, and
any struct without a struct field, goes to Warp's own method, which is right
for them; that is one ``isinstance`` check on the common path.  A struct with a
struct field gets the adjoint 1.8.1 builds, in the same order: a new instance
of the struct, each array field's gradient recorded and set, each struct field
replaced by the adjoint of that field got through ``tape.get_adjoint`` again
(so the patched method, at any depth), every other field copied, and the
struct itself recorded with its adjoint last.  ``tape.gradients`` then holds
what 1.8.1's holds, in the same order, and ``Tape.zero()``, unchanged, clears
the nested arrays as it clears the outer ones.

The probe builds a two-level struct over an array whose gradient is 5, asks a
tape for the struct's adjoint as ``backward`` would, and calls ``tape.zero()``:
the gradient must be 0.  No kernel is compiled.
"""

from __future__ import annotations

from gpushim import Patch

patch = Patch(
    id="warp.tape_zero_nested_struct",
    affected="<1.8.1",
    fixed_in="1.8.1",
    issue="NVIDIA/warp GH-807",
    fix="NVIDIA/warp@34af0fdba (562eb30d0 on main)",
    summary="Tape.zero() leaves the gradients of arrays in nested structs, so they accumulate across iterations.",
)


@patch.applier
def _apply(warp, journal):
    import inspect

    from gpushim import TargetMismatch

    codegen = getattr(warp, "codegen", None)
    struct_instance = getattr(codegen, "StructInstance", None)
    struct_type = getattr(codegen, "Struct", None)
    array_type = getattr(getattr(warp, "types", None), "array", None)
    tape = getattr(warp, "Tape", None)
    if not all(isinstance(found, type) for found in (struct_instance, struct_type, array_type, tape)):
        raise TargetMismatch("warp lacks one of codegen.StructInstance, codegen.Struct, types.array, Tape")
    if "get_adjoint" not in vars(tape) or tuple(inspect.signature(tape.get_adjoint).parameters) != ("self", "a"):
        raise TargetMismatch("warp.Tape has no get_adjoint(self, a)")

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
        a = args[0] if args else kwargs.get("a")
        if (
            not isinstance(a, struct_instance)
            or len(args) + len(kwargs) != 1
            or not any(isinstance(var.type, struct_type) for var in a._cls.vars.values())
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
