"""``Tape.backward`` accumulates gradients into NumPy arrays and tensors passed to ``wp.launch`` (Warp 1.3 to 1.5).

What breaks.  From 1.3.0 ``wp.launch`` takes arrays that are not Warp's
(anything with ``__array_interface__``, ``__array__`` or, on a CUDA device,
``__cuda_array_interface__``) for a kernel's array parameters, viewing their
memory in place.  ``Tape.get_adjoint`` hands back any argument that is neither
a Warp array nor a struct as its own adjoint, which is harmless for a float or
a ``vec3`` but makes such an array its own gradient: the adjoint launch
accumulates into the caller's data.  ``x = np.ones(4, dtype=np.float32)`` read
by ``y[i] = 2.0 * x[i]`` holds ``[3, 3, 3, 3]`` after
``tape.backward(grads={y: ones})``.  A torch tensor goes the same way, through
``__array__`` on the CPU and ``__cuda_array_interface__`` on a GPU (read in
the code, not run here: the cells have no torch and no GPU).  A non-Warp
output is worse still: its values act as the incoming gradient of the output,
and flow into the gradients of the Warp arrays that produced it.  Nothing
raises.  1.2.2 refuses the NumPy array, 1.3.0 and 1.5.1 overwrite it, 1.6.0
leaves it as it was.

Fixed upstream.  NVIDIA/warp GH-394, fixed by NVIDIA/warp@a7d4d54be (``git tag
--contains``: v1.6.0 first), which makes ``get_adjoint`` give ``None`` for
anything that is not a Warp array or a struct, and teaches ``pack_arg`` to
pack a ``None`` adjoint of a scalar or value-type parameter as that type's
zero.  A ``None`` adjoint of an array parameter was already a null array,
which the generated code skips; the change is all Python.  External arrays
came in with NVIDIA/warp@0f22ff553 (v1.3.0 first), hence the range.

How the fix works.  Two wrappers.  ``Tape.get_adjoint`` gives ``None`` for an
argument that is neither a Warp array (``warp.types.is_array``) nor a struct
instance, as 1.6.0 does, and goes to Warp's own method (and any patch on it,
such as ``warp.tape_zero_nested_struct``) for the rest.  A ``None`` adjoint of
a scalar or value-type parameter would make the released ``pack_arg`` raise,
so ``wp.launch`` (``warp.launch`` and ``warp.context.launch``, one object) is
wrapped too: an adjoint launch with ``None`` among its adjoints gets, for each
such parameter, what the released ``pack_arg`` packs as 1.6.0's zero
(``vec3(0)``, and 0 for a scalar), the parameter types read from the kernel,
or for a generic kernel from the overload ``launch`` picks; the rest goes to
Warp's ``launch`` as called.  A scalar's adjoint argument is only ever
accumulated into by the backward kernel, never read, so the gradients of
everything else are as they were.  ``pack_arg``, called once per argument, is
left alone: a wrapper there added about 13 us to a 7-argument CPU launch of 23
us (a loaded 2-core machine, fastest of 100 batches), where the wrapper of
``launch``, which binds the call as ``launch`` does and looks no further for a
forward launch, adds 2.3 us, all but 0.3 us of it wrapt's.  ``launch`` took
``block_dim`` in 1.5.0; the wrapper is checked against either signature.
``Tape.backward`` looks ``wp.launch`` up at every launch, so it is covered in
either import order.  Nothing here is compiled into kernels: Warp's module
hashes and kernel cache are unaffected.

Not backported.  a7d4d54be also removed ``pack_arg``'s branch that packs any
Python ``bool`` as a ``c_bool``, whatever the parameter's type: on 1.3.0 to
1.5.1 ``True`` passed for a ``float`` parameter reads as garbage
(``6.9e-11``), where 1.6.0 reads ``1.0``.  That is another bug, left as
released here for a patch of its own.  A ``launch`` bound by name before
gpushim patched Warp (``from warp import launch``) still refuses ``None``
adjoints of scalars in adjoint launches made by hand; ``Tape.backward`` is
unaffected.  1.6.0's new test.

The probe.  ``y[i] = 2.0 * x[i]`` on the CPU with ``x`` a NumPy array of ones,
then ``tape.backward`` with a gradient of ones on ``y``: ``x`` must still be
ones.  Releases before 1.3 refuse the NumPy array at the launch, which is no
bug of this patch's.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, TargetMismatch, expect

patch = Patch(
    id="warp.tape_external_inputs",
    affected=">=1.3.0,<1.6.0",
    fixed_in="1.6.0",
    issue="NVIDIA/warp GH-394",
    fix="NVIDIA/warp@a7d4d54be",
    summary="Tape.backward accumulates gradients into the NumPy arrays and tensors passed to wp.launch.",
)

_GET_ADJOINT = Parameters("a")  # after self
_LAUNCH_ARGUMENTS = ("kernel", "dim")
_LAUNCH_DEFAULTS = {
    "inputs": [],
    "outputs": [],
    "adj_inputs": [],
    "adj_outputs": [],
    "device": None,
    "stream": None,
    "adjoint": False,
    "record_tape": True,
    "record_cmd": False,
    "max_blocks": 0,
}
# launch() up to 1.4.2, and from 1.5.0, which added block_dim
_LAUNCHES = (
    Parameters(*_LAUNCH_ARGUMENTS, **_LAUNCH_DEFAULTS),
    Parameters(*_LAUNCH_ARGUMENTS, **_LAUNCH_DEFAULTS, block_dim=256),
)


def _zero_adjoint(arg_type):
    """The argument the released ``pack_arg`` packs as 1.6.0 packs a ``None`` adjoint; None for arrays and structs.

    That is a value type's zero (``vec3(0)``) and, for a scalar, 0, which it
    converts to the scalar's ctype.  Array and struct parameters are typed by
    instances (``wp.array(dtype=float)``), value types and scalars by classes.
    """
    import ctypes

    if not isinstance(arg_type, type):
        return None
    if issubclass(arg_type, ctypes.Array):
        return arg_type(0)
    return 0 if hasattr(arg_type, "_type_") else None


def _parameter_types(kernel, inputs, outputs):
    """The types of ``kernel``'s parameters, of the overload ``launch`` picks for a generic kernel."""
    if kernel.is_generic:
        kernel = kernel.add_overload(kernel.infer_argument_types([*inputs, *outputs]))
    return [arg.type for arg in kernel.adj.args]


def _with_zero_adjoints(adjoints, types):
    return [_zero_adjoint(arg_type) if adjoint is None else adjoint for adjoint, arg_type in zip(adjoints, types)]


def _launch_parameters(launch):
    """Which of the two signatures ``launch`` has; a TargetMismatch naming the newer one where neither."""
    for parameters in _LAUNCHES[:-1]:
        try:
            parameters.check(launch)
        except TargetMismatch:
            continue
        return parameters
    _LAUNCHES[-1].check(launch)
    return _LAUNCHES[-1]


@patch.applier
def _apply(warp, journal):
    is_array = expect(warp, "types.is_array", callable)
    struct_instance = expect(warp, "codegen.StructInstance", type)
    tape = expect(warp, "Tape", type)
    context = expect(warp, "context")
    _GET_ADJOINT.check(expect(tape, "get_adjoint", callable, own=True), method=True)
    launch_parameters = _launch_parameters(expect(context, "launch", callable))

    def get_adjoint(wrapped, instance, args, kwargs):
        try:
            (a,) = _GET_ADJOINT.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
        if is_array(a) or isinstance(a, struct_instance):
            return wrapped(*args, **kwargs)
        return None

    def launch(wrapped, instance, args, kwargs):
        try:
            bound = list(launch_parameters.bind(*args, **kwargs))
        except TypeError:
            return wrapped(*args, **kwargs)
        kernel, _, inputs, outputs, adj_inputs, adj_outputs, _, _, adjoint = bound[:9]
        if not adjoint or not any(each is None for each in [*adj_inputs, *adj_outputs]):
            return wrapped(*args, **kwargs)
        try:
            types = _parameter_types(kernel, inputs, outputs)
        except Exception:
            return wrapped(*args, **kwargs)  # not a kernel, or arguments launch() refuses with its own message
        bound[4] = _with_zero_adjoints(adj_inputs, types)
        bound[5] = _with_zero_adjoints(adj_outputs, types[len(adj_inputs) :])
        return wrapped(*bound)

    journal.wrap(tape, "get_adjoint", get_adjoint)
    journal.wrap([context, warp], "launch", launch)


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
