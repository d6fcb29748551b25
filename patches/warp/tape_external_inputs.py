"""``Tape.backward`` accumulates gradients into NumPy arrays and tensors passed to ``wp.launch`` (Warp 1.3 to 1.5).

What breaks.  From 1.3.0 ``wp.launch`` takes arrays that are not Warp's
(anything with ``__array_interface__``, ``__array__`` or, on a CUDA device,
``__cuda_array_interface__``) for a kernel's array parameters, viewing their
memory in place.  ``Tape.get_adjoint`` hands back any argument that is neither
a Warp array nor a struct as its own adjoint, which is harmless for a float or
a ``vec3`` but makes such an array its own gradient: the adjoint launch
accumulates into the caller's data.  ``x = np.ones(4, dtype=np.float32)``
read by ``y[i] = 2.0 * x[i]`` holds ``[3, 3, 3, 3]`` after
``tape.backward(grads={y: ones})``; the same goes for a torch tensor, on the
CPU or on a GPU.  A non-Warp output is worse still: its values act as the
incoming gradient of the output, and flow into the gradients of the Warp
arrays that produced it.  Nothing raises.  1.2.2 refuses the NumPy array, 1.3.0
and 1.5.1 overwrite it, 1.6.0 leaves it as it was.

Fixed upstream.  NVIDIA/warp GH-394, fixed by NVIDIA/warp@a7d4d54be (``git tag
--contains``: v1.6.0 first), which makes ``get_adjoint`` give ``None`` for
anything that is not a Warp array or a struct, and teaches ``pack_arg`` to pack
a ``None`` adjoint of a scalar or value-type parameter as that type's zero.  A
``None`` adjoint of an array parameter was already a null array, which the
generated code skips; the change is all Python.  External arrays came in with
NVIDIA/warp@0f22ff553 (v1.3.0 first), hence the range.

How the fix works.  Two wrappers, in ``warp.tape`` and ``warp.context``.
``Tape.get_adjoint`` gives ``None`` for an argument that is neither a Warp
array (``warp.types.is_array``) nor a struct instance, as 1.6.0 does, and goes
to Warp's own method (and any patch on it, such as
``warp.tape_zero_nested_struct``) for the rest.  ``pack_arg``, which
``launch`` looks up in its module at every argument, packs a ``None`` adjoint
of a parameter that is neither an array nor a struct as 1.6.0 does: a value
type (``vec3``, ``mat22``, ...) as ``arg_type(0)``, a scalar as
``arg_type._type_(0)``; every other call goes to Warp's own ``pack_arg``.  A
scalar's adjoint argument is only ever accumulated into by the backward kernel,
never read, so the gradients of everything else are as they were.  Nothing
here is compiled into kernels: Warp's module hashes and kernel cache are
unaffected.

Not backported.  a7d4d54be also removed ``pack_arg``'s branch that packs any
Python ``bool`` as a ``c_bool``, whatever the parameter's type: on 1.3.0 to
1.5.1 ``True`` passed for a ``float`` parameter reads as garbage
(``6.9e-11``), where 1.6.0 reads ``1.0``.  That is another bug, with its own
probe to come, and stays as released here.  1.6.0's new test.

The probe.  ``y[i] = 2.0 * x[i]`` on the CPU with ``x`` a NumPy array of ones,
then ``tape.backward`` with a gradient of ones on ``y``: ``x`` must still be
ones.  Releases before 1.3 refuse the NumPy array at the launch, which is no
bug of this patch's.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="warp.tape_external_inputs",
    affected=">=1.3.0,<1.6.0",
    fixed_in="1.6.0",
    issue="NVIDIA/warp GH-394",
    fix="NVIDIA/warp@a7d4d54be",
    summary="Tape.backward accumulates gradients into the NumPy arrays and tensors passed to wp.launch.",
)

_GET_ADJOINT = Parameters("a")  # after self
_PACK_ARG = Parameters("kernel", "arg_type", "arg_name", "value", "device", adjoint=False)


def _zero_adjoint(arg_type):
    """What 1.6.0 packs for a ``None`` adjoint: a value type's or a scalar's zero; None for arrays and structs.

    Array and struct parameters are typed by instances (``wp.array(dtype=float)``),
    value types and scalars by classes.
    """
    import ctypes

    if not isinstance(arg_type, type):
        return None
    if issubclass(arg_type, ctypes.Array):
        return arg_type(0)
    scalar = getattr(arg_type, "_type_", None)
    return None if scalar is None else scalar(0)


@patch.applier
def _apply(warp, journal):
    is_array = expect(warp, "types.is_array", callable)
    struct_instance = expect(warp, "codegen.StructInstance", type)
    tape = expect(warp, "Tape", type)
    context = expect(warp, "context")
    _GET_ADJOINT.check(expect(tape, "get_adjoint", callable, own=True), method=True)
    _PACK_ARG.check(expect(context, "pack_arg", callable))

    def get_adjoint(wrapped, instance, args, kwargs):
        try:
            (a,) = _GET_ADJOINT.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
        if is_array(a) or isinstance(a, struct_instance):
            return wrapped(*args, **kwargs)
        return None

    def pack_arg(wrapped, instance, args, kwargs):
        try:
            kernel, arg_type, arg_name, value, device, adjoint = _PACK_ARG.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)
        if value is None and adjoint:
            zero = _zero_adjoint(arg_type)
            if zero is not None:
                return zero
        return wrapped(*args, **kwargs)

    journal.wrap(tape, "get_adjoint", get_adjoint)
    journal.wrap(context, "pack_arg", pack_arg)


@patch.prober
def _probe():
    """A NumPy array of ones read by ``y[i] = 2.0 * x[i]`` must still hold ones after ``tape.backward``."""
    import numpy as np
    import warp

    warp.config.quiet = True
    warp.init()

    def double(x, y):
        i = warp.tid()
        y[i] = 2.0 * x[i]

    # Not string annotations: Warp up to 1.2 evaluates none.
    double.__annotations__ = {"x": warp.array(dtype=warp.float32), "y": warp.array(dtype=warp.float32)}
    double = warp.kernel(double)
    x = np.ones(4, dtype=np.float32)
    y = warp.zeros(4, dtype=warp.float32, device="cpu", requires_grad=True)
    tape = warp.Tape()
    try:
        with tape:
            warp.launch(double, dim=4, inputs=[x], outputs=[y], device="cpu")
    except RuntimeError as error:
        if "expects an array" in str(error):
            return None  # Warp before 1.3 refuses the NumPy array: there is nothing to overwrite
        raise
    tape.backward(grads={y: warp.ones(4, dtype=warp.float32, device="cpu")})
    if x.tolist() != [1.0, 1.0, 1.0, 1.0]:
        return f"a NumPy input of ones reads {x.tolist()} after tape.backward, not [1.0, 1.0, 1.0, 1.0]"
    return None
