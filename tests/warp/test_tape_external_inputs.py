"""warp.tape_external_inputs: Tape.backward accumulates into NumPy arrays passed to wp.launch (NVIDIA/warp GH-394).

The corpus records kernels on Warp's CPU device under a ``wp.Tape`` with NumPy
inputs of float32, float64, float16 and int32, 2-d, strided and vec3 arrays,
an object that has only ``__array__`` (as a torch CPU tensor has), NumPy and
Warp inputs mixed, with and without ``requires_grad``, NumPy outputs, chains
of launches, scalar and value-type parameters given as Python numbers, NumPy
scalars, tuples and NumPy arrays, a generic kernel, ``tape.zero()`` and a
second backward, and adjoint launches made directly with ``None`` or NumPy
adjoints, of a generic kernel too, and what ``tape.get_adjoint`` gives.  Each case
records every external array after ``backward`` and every Warp gradient.  The
cases pass the incoming gradient with ``loss`` or with ``grads=`` but never
zero a tape given ``grads=``, which 1.6.0 also changed (GH-407).  No ``from
__future__ import annotations`` here: Warp reads the kernels' annotations as
types.
"""

from typing import Any

import numpy as np

from gpushim.patches.warp.tape_external_inputs import patch
from gpushim.patches.warp.tape_zero_nested_struct import patch as nested_struct_patch
from tests.support import applied, gate, record_corpus

GATE = gate(patch)

import warp as wp

wp.config.quiet = True
wp.init()

N = 4


@wp.kernel
def double(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel
def square_sum64(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i])


@wp.kernel
def half_scale(x: wp.array(dtype=wp.float16), y: wp.array(dtype=wp.float32)):
    i = wp.tid()
    y[i] = 3.0 * float(x[i])


@wp.kernel
def from_int(n: wp.array(dtype=wp.int32), x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32)):
    i = wp.tid()
    y[i] = float(n[i]) * x[i]


@wp.kernel
def grid(x: wp.array2d(dtype=wp.float32), loss: wp.array(dtype=wp.float32)):
    i, j = wp.tid()
    wp.atomic_add(loss, 0, float(i + 1) * x[i, j] * x[i, j])


@wp.kernel
def lengths(v: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.float32)):
    i = wp.tid()
    y[i] = wp.dot(v[i], v[i])


@wp.kernel
def product(a: wp.array(dtype=wp.float32), b: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32)):
    i = wp.tid()
    y[i] = a[i] * b[i] + a[i]


@wp.kernel
def parameters(
    x: wp.array(dtype=wp.float32),
    s: wp.float32,
    n: wp.int32,
    flag: wp.bool,
    v: wp.vec3,
    m: wp.mat22,
    y: wp.array(dtype=wp.float32),
):
    i = wp.tid()
    k = s * float(n) * (v[1] + m[0, 1])
    if flag:
        k = k + 1.0
    y[i] = k * x[i]


@wp.kernel
def generic_scale(x: wp.array(dtype=Any), s: Any, y: wp.array(dtype=Any)):
    i = wp.tid()
    y[i] = s * x[i]


def floats(values, dtype=np.float32):
    return np.array(values, dtype=dtype)


def warp_array(values, dtype=wp.float32, requires_grad=True):
    return wp.array(values, dtype=dtype, device="cpu", requires_grad=requires_grad)


def grad_of(array):
    return None if array.grad is None else array.grad.numpy().tolist()


class ArrayOnly:
    """An array that offers only ``__array__``, as a torch CPU tensor does: Warp views its memory."""

    def __init__(self, values):
        self.values = values

    def __array__(self, dtype=None, copy=None):
        return self.values


def seeded_backward(tape, output):
    tape.backward(grads={output: wp.ones(output.shape, dtype=output.dtype, device="cpu")})


def numpy_input_case(kernel, x, dim=N, output_dtype=wp.float32, loss=False):
    """``kernel(x, out)`` under a tape, then backward: what ``x`` and the output hold, and the tape's gradient count."""
    out = wp.zeros(1 if loss else N, dtype=output_dtype, device="cpu", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=dim, inputs=[x], outputs=[out], device="cpu")
    if loss:
        tape.backward(out)
    else:
        seeded_backward(tape, out)
    return {"input": x.tolist(), "output": out.numpy().tolist(), "tape gradients": len(tape.gradients)}


def dtype_cases():
    return {
        "float32 ones": numpy_input_case(double, np.ones(N, dtype=np.float32)),
        "float32 values": numpy_input_case(double, floats([0.5, -1.0, 2.0, 3.5])),
        "float64 into a loss": numpy_input_case(
            square_sum64, floats([1.0, 2.0, 3.0, 4.0], np.float64), output_dtype=wp.float64, loss=True
        ),
        "float16": numpy_input_case(half_scale, floats([1.0, 0.5, -2.0, 4.0], np.float16)),
        "2-d into a loss": numpy_input_case(grid, floats([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), dim=(2, 3), loss=True),
        "vec3 as (4, 3)": numpy_input_case(lengths, floats(np.arange(12).reshape(N, 3))),
        "strided": strided_case(),
        "__array__ only": array_only_case(),
    }


def strided_case():
    base = floats(np.arange(2 * N))
    view = base[::2]
    out = wp.zeros(N, dtype=wp.float32, device="cpu", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(double, dim=N, inputs=[view], outputs=[out], device="cpu")
    seeded_backward(tape, out)
    return {"base": base.tolist(), "output": out.numpy().tolist()}


def array_only_case():
    values = floats([1.0, 2.0, 3.0, 4.0])
    out = wp.zeros(N, dtype=wp.float32, device="cpu", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(double, dim=N, inputs=[ArrayOnly(values)], outputs=[out], device="cpu")
    seeded_backward(tape, out)
    return {"values": values.tolist(), "output": out.numpy().tolist()}


def mixed_case(a_is_numpy, b_is_numpy, b_requires_grad, out_requires_grad):
    a_values, b_values = [1.0, 2.0, 3.0, 4.0], [0.5, 0.25, -1.0, 2.0]
    a = floats(a_values) if a_is_numpy else warp_array(a_values)
    b = floats(b_values) if b_is_numpy else warp_array(b_values, requires_grad=b_requires_grad)
    out = wp.zeros(N, dtype=wp.float32, device="cpu", requires_grad=out_requires_grad)
    tape = wp.Tape()
    with tape:
        wp.launch(product, dim=N, inputs=[a, b], outputs=[out], device="cpu")
    seeded_backward(tape, out)
    return {
        "a": a.tolist() if a_is_numpy else {"values": a.numpy().tolist(), "grad": grad_of(a)},
        "b": b.tolist() if b_is_numpy else {"values": b.numpy().tolist(), "grad": grad_of(b)},
        "output grad": grad_of(out),
    }


def mixed_cases():
    outcomes = {}
    for a_is_numpy in (True, False):
        for b_is_numpy in (True, False):
            for b_requires_grad in (True, False) if not b_is_numpy else (False,):
                for out_requires_grad in (True, False):
                    name = (
                        f"a {'numpy' if a_is_numpy else 'warp'}, "
                        f"b {'numpy' if b_is_numpy else 'warp' + (' with grad' if b_requires_grad else '')}, "
                        f"output {'with' if out_requires_grad else 'without'} grad"
                    )
                    outcomes[name] = mixed_case(a_is_numpy, b_is_numpy, b_requires_grad, out_requires_grad)
    return outcomes


def numpy_output_case():
    """A NumPy output: 1.6.0 gives it no adjoint, so nothing flows back into ``x``."""
    x = warp_array([1.0, 2.0, 3.0, 4.0])
    y = np.zeros(N, dtype=np.float32)
    tape = wp.Tape()
    with tape:
        wp.launch(double, dim=N, inputs=[x], outputs=[y], device="cpu")
    tape.backward()
    return {"x grad": grad_of(x), "y": y.tolist()}


def chain_case():
    """NumPy ``x`` feeds three launches, ``x -> y -> z`` and ``x -> w``; backward from ``z``, then from ``w`` too."""
    x = floats([1.0, 2.0, 3.0, 4.0])
    y, z, w = (wp.zeros(N, dtype=wp.float32, device="cpu", requires_grad=True) for _ in range(3))
    tape = wp.Tape()
    with tape:
        wp.launch(double, dim=N, inputs=[x], outputs=[y], device="cpu")
        wp.launch(product, dim=N, inputs=[y, x], outputs=[z], device="cpu")
        wp.launch(product, dim=N, inputs=[x, x], outputs=[w], device="cpu")
    seeded_backward(tape, z)
    first = {"x": x.tolist(), "y grad": grad_of(y), "z grad": grad_of(z), "w grad": grad_of(w)}
    seeded_backward(tape, w)
    second = {"x": x.tolist(), "y grad": grad_of(y), "w grad": grad_of(w)}
    return {"first backward": first, "second backward": second}


def zero_case(passes):
    """Backward through a loss, ``tape.zero()``, again: the NumPy input and the Warp gradients after each."""
    x = floats([1.0, 2.0, 3.0, 4.0], np.float64)
    loss = wp.zeros(1, dtype=wp.float64, device="cpu", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square_sum64, dim=N, inputs=[x], outputs=[loss], device="cpu")
    rounds = []
    for _ in range(passes):
        tape.backward(loss)
        backward = {"x": x.tolist(), "loss grad": grad_of(loss)}
        tape.zero()
        rounds.append({"backward": backward, "zeroed loss grad": grad_of(loss), "x": x.tolist()})
    return rounds


PARAMETERS = {
    "Python numbers and wp types": (2.0, 3, True, wp.vec3(1.0, 2.0, 3.0), wp.mat22(1.0, 0.5, 0.0, 1.0)),
    "NumPy scalars and tuples": (np.float32(2.0), np.int32(3), False, (1.0, 2.0, 3.0), ((1.0, 0.5), (0.0, 1.0))),
    "NumPy arrays for vec3 and mat22": (1.5, 2, True, floats([1.0, -2.0, 3.0]), floats([[1.0, 4.0], [0.0, 1.0]])),
    "zero scale": (0.0, 1, False, wp.vec3(0.0, 1.0, 0.0), wp.mat22(0.0, 1.0, 0.0, 0.0)),
}


def parameters_case(x_is_numpy, s, n, flag, v, m):
    values = [1.0, -1.0, 2.0, 0.5]
    x = floats(values) if x_is_numpy else warp_array(values)
    y = wp.zeros(N, dtype=wp.float32, device="cpu", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(parameters, dim=N, inputs=[x, s, n, flag, v, m], outputs=[y], device="cpu")
    seeded_backward(tape, y)
    return {
        "x": x.tolist() if x_is_numpy else grad_of(x),
        "y": y.numpy().tolist(),
        "v": np.asarray(v).tolist(),
        "m": np.asarray(m).tolist(),
    }


def parameter_cases():
    return {
        f"{name}, {'numpy' if x_is_numpy else 'warp'} x": parameters_case(x_is_numpy, *arguments)
        for name, arguments in PARAMETERS.items()
        for x_is_numpy in (True, False)
    }


def int_input_case():
    n = np.array([1, 2, 3, 4], dtype=np.int32)
    x = warp_array([0.5, 0.5, 0.5, 0.5])
    y = wp.zeros(N, dtype=wp.float32, device="cpu", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(from_int, dim=N, inputs=[n, x], outputs=[y], device="cpu")
    seeded_backward(tape, y)
    return {"n": n.tolist(), "x grad": grad_of(x)}


def direct_adjoint_cases():
    """Adjoint launches made by hand: ``None`` for the scalar and value-type adjoints, a NumPy array for ``x``'s."""
    x = warp_array([1.0, -1.0, 2.0, 0.5])
    y = wp.zeros(N, dtype=wp.float32, device="cpu", requires_grad=True)
    y.grad.fill_(1.0)
    inputs = [x, 2.0, 3, True, wp.vec3(1.0, 2.0, 3.0), wp.mat22(1.0, 0.5, 0.0, 1.0)]
    outcomes = {}
    for name, x_adjoint in (("x's grad", x.grad), ("a NumPy array", np.zeros(N, dtype=np.float32))):
        outcomes[name] = adjoint_launch(
            parameters, inputs, [y], [x_adjoint, None, None, None, None, None], [y.grad], x_adjoint
        )
    generic_x = warp_array([1.0, 2.0, 3.0, 4.0], dtype=wp.float64)
    generic_y = warp_array(np.zeros(N), dtype=wp.float64)
    generic_y.grad.fill_(1.0)
    outcomes["generic kernel"] = adjoint_launch(
        generic_scale,
        [generic_x, wp.float64(2.5)],
        [generic_y],
        [generic_x.grad, None],
        [generic_y.grad],
        generic_x.grad,
    )
    return outcomes


def adjoint_launch(kernel, inputs, outputs, adj_inputs, adj_outputs, read):
    try:
        wp.launch(
            kernel,
            dim=N,
            inputs=inputs,
            outputs=outputs,
            adj_inputs=adj_inputs,
            adj_outputs=adj_outputs,
            adjoint=True,
            device="cpu",
        )
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return read.tolist() if isinstance(read, np.ndarray) else read.numpy().tolist()


def generic_case():
    """A generic kernel under a tape, given a Warp scalar (generic kernels infer no type from a NumPy array)."""
    x = warp_array([1.0, 2.0, 3.0, 4.0], dtype=wp.float64)
    y = wp.zeros(N, dtype=wp.float64, device="cpu", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(generic_scale, dim=N, inputs=[x, wp.float64(2.5)], outputs=[y], device="cpu")
    seeded_backward(tape, y)
    return {"x grad": grad_of(x), "y": y.numpy().tolist()}


def adjoints_a_tape_gives():
    tape = wp.Tape()
    x = warp_array([1.0, 2.0])
    plain = warp_array([1.0, 2.0], requires_grad=False)
    values = {
        "NumPy array": np.ones(2, dtype=np.float32),
        "float": 2.0,
        "int": 3,
        "bool": True,
        "vec3": wp.vec3(1.0, 2.0, 3.0),
        "tuple": (1.0, 2.0),
        "None": None,
        "Warp array without grad": plain,
    }
    outcomes = {name: repr(tape.get_adjoint(value)) for name, value in values.items()}
    outcomes["Warp array with grad"] = tape.get_adjoint(x) is x.grad
    outcomes["tape gradients"] = len(tape.gradients)
    return outcomes


def run_corpus():
    return {
        "dtypes and layouts": dtype_cases(),
        "mixed": mixed_cases(),
        "NumPy output": numpy_output_case(),
        "chain": chain_case(),
        "zero, one pass": zero_case(1),
        "zero, three passes": zero_case(3),
        "parameters": parameter_cases(),
        "int32 input": int_input_case(),
        "generic kernel": generic_case(),
        "direct adjoint launches": direct_adjoint_cases(),
        "get_adjoint": adjoints_a_tape_gives(),
    }


@GATE.ends_only
def test_needed_a_numpy_input_gathers_its_own_gradient_without_gpushim():
    outcome = numpy_input_case(double, np.ones(N, dtype=np.float32))
    assert outcome["input"] == [3.0] * N


@GATE.ends_only
def test_effective_a_numpy_input_is_left_as_it_was_with_gpushim():
    with applied(patch):
        outcome = numpy_input_case(double, np.ones(N, dtype=np.float32))
    assert outcome["input"] == [1.0] * N


@GATE.ends_only
def test_a_numpy_output_no_longer_seeds_the_gradient_of_its_inputs():
    assert numpy_output_case()["x grad"] == [4.0, 8.0, 12.0, 16.0]
    with applied(patch):
        assert numpy_output_case()["x grad"] == [0.0] * N


@GATE.ends_only
def test_scalar_and_value_adjoints_given_as_none_are_packed_as_zeros():
    assert all("unable to pack kernel parameter" in outcome for outcome in direct_adjoint_cases().values())
    with applied(patch):
        outcomes = direct_adjoint_cases()
    assert outcomes == {"x's grad": [16.0] * N, "a NumPy array": [16.0] * N, "generic kernel": [2.5] * N}


@GATE.ends_only
def test_works_with_the_nested_struct_patch_applied_before_or_after():
    """Both patches wrap ``Tape.get_adjoint`` on releases before 1.6.0; either may be applied first."""
    expected = numpy_input_case(double, np.ones(N, dtype=np.float32))
    expected["input"] = [1.0] * N
    for first, second in ((patch, nested_struct_patch), (nested_struct_patch, patch)):
        with applied(first), applied(second):
            assert numpy_input_case(double, np.ones(N, dtype=np.float32)) == expected
            assert repr(wp.Tape().get_adjoint(np.ones(2))) == "None"


@GATE.ends_only
def test_a_forward_launch_reaches_warp_as_called():
    """The ``launch`` wrapper passes a forward launch on untouched, ``record_cmd`` and positional arguments too."""
    x, y = warp_array([1.0, 2.0, 3.0, 4.0]), wp.zeros(N, dtype=wp.float32, device="cpu")
    with applied(patch):
        command = wp.launch(double, N, [x], [y], [], [], "cpu", None, False, True, True)
        assert y.numpy().tolist() == [0.0] * N
        command.launch()
    assert y.numpy().tolist() == [2.0, 4.0, 6.0, 8.0]


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.6.0; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert outcomes["dtypes and layouts"]["float32 ones"]["input"] == [1.0] * N
