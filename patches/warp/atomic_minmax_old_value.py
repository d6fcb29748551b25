"""On CUDA, float ``wp.atomic_min`` and ``wp.atomic_max`` return the value they stored, not the old one (Warp < 1.11).

What breaks.  ``wp.atomic_min(a, i, v)`` and ``wp.atomic_max`` store the
smaller (larger) of ``a[i]`` and ``v`` and return what ``a[i]`` held.  On a
CUDA device, the float and double ones of ``native/builtin.h`` emulate this
with a compare-and-swap loop that runs while ``v`` would still replace what
the swap last returned: the swap that stores ``v`` returns the old value,
which ``v`` would still replace, so the loop swaps once more, fails against
the ``v`` it stored, and returns ``v``.  ``old = wp.atomic_min(a, 0, 1.0)``
on ``a[0] = 2.0`` gives 1.0, not 2.0, on vectors and matrices of them
component by component; where nothing is stored the old value is right, and
so is what the array ends holding.  Nothing raises.  The CPU build's
functions return the old value.

Fixed upstream.  NVIDIA/warp#1058, fixed by NVIDIA/warp@4f07ad040, a loop
that ends when its swap succeeded (``git tag --contains``: v1.11.0 first;
no 1.10.x has it), which NVIDIA/warp@2ac4cf52e, also first in v1.11.0,
skips where nothing would be stored.  The loop came with
NVIDIA/warp@8383a769a (v0.5.0 first): every 1.x release before 1.11.0 holds
it, for float and, from 1.4.0, double.  The bug shows only on a device; on
the CPU the matrix runs the float CUDA functions one thread at a time: those
of 1.2.0 and 1.10.1 return the value they stored, 1.11.0's the old one.

How the fix works.  An overlay (``_overlay``) on the CUDA build alone:
after ``builtin.h``, and only where ``__CUDA_ARCH__`` is defined, every
module gets ``gpushim_atomic_min`` and ``gpushim_atomic_max`` of float (and
double where the release has them) that swap until a swap succeeds, storing
the smaller (larger) of what it found and the value, and return what it
replaced, as 1.11.0 does; of the other types they return the release's.
Vectors, matrices and arrays reach them as the release's own
``atomic_min`` of ``vec.h``, ``mat.h`` and ``array.h`` reach the released
ones, and a ``#define`` points the generated code's ``wp::atomic_min`` at
them (codegen writes the builtin's name, which the following code alone
reads).  The CPU build compiles the release's code, unchanged; the module
hash of every kernel or function that calls ``atomic_min`` or ``atomic_max``
differs while the patch is applied.  The patch first checks the released
functions: the float and double loops and the ones that reach them.

Not backported.  Nothing of the fix: 1.11.0 also reformats the headers
(clang-format), which changes no function the overlay repeats.  What
``warp.so`` compiled itself is out of reach, and none of it calls these.

The probe.  ``wp.atomic_min`` and ``wp.atomic_max`` of a float array on
``cuda:0``, which must return the old value; without a device it cannot
run.
"""

from __future__ import annotations

from gpushim import Patch, TargetMismatch
from gpushim.overlay import NativeFunction
from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp._overlay import builtin_overloads, calling, native_header, overlay

patch = Patch(
    id="warp.atomic_minmax_old_value",
    affected="<1.11.0",
    fixed_in="1.11.0",
    issue="NVIDIA/warp#1058",
    fix="NVIDIA/warp@4f07ad040",
    summary="On CUDA, float and double wp.atomic_min and wp.atomic_max return the value they stored, not the old one.",
)

# Mixed into the hash of every adjoint that calls atomic_min or atomic_max; a change to the code below must change it.
_HASH_SALT = b"gpushim warp.atomic_minmax_old_value 1"

_OPERATIONS = {"min": "<", "max": ">"}
# The float types of builtin.h's compare-and-swap loops: the suffix of the loop's pointer, the conversions it calls.
_LOOPS = {
    "float": ("int", "__int_as_float", "__float_as_int"),
    "double": ("ull", "__longlong_as_double", "__double_as_longlong"),
}
# The indices of array.h's atomic_min and atomic_max, one to four.
_INDICES = ("i", "i, j", "i, j, k", "i, j, k, l")


def _parameters(indices: str) -> str:
    return ", ".join(f"int {index}" for index in indices.split(", "))


def _released_loop(kind: str, operation: str) -> NativeFunction:
    """builtin.h's compare-and-swap loop of ``kind``, which swaps again after the swap that stored ``val``."""
    name, as_float, as_bits = _LOOPS[kind]
    return NativeFunction(
        f"inline CUDA_CALLABLE {kind} atomic_{operation}({kind}* address, {kind} val)",
        f"while (val {_OPERATIONS[operation]} {as_float}(old))",
        f"old = atomicCAS(address_as_{name}, assumed, {as_bits}(val));",
        f"return {as_float}(old);",
    )


def _reaching(operation: str) -> dict[str, list[NativeFunction]]:
    """The release's ``atomic_<operation>`` of vectors, matrices and arrays, which the overlay's repeat."""
    call = f"atomic_{operation}"
    return {
        "vec.h": [
            NativeFunction(
                f"inline CUDA_CALLABLE vec_t<Length, Type> {call}(vec_t<Length, Type> * addr,"
                " vec_t<Length, Type> value)",
                f"ret[i] = {call}(&(addr -> c[i]), value[i]);",
            )
        ],
        "mat.h": [
            NativeFunction(
                f"inline CUDA_CALLABLE mat_t<Rows,Cols,Type> {call}(mat_t<Rows,Cols,Type> * addr,"
                " mat_t<Rows,Cols,Type> value)",
                f"m.data[i][j] = {call}(&addr->data[i][j], value.data[i][j]);",
            )
        ],
        "array.h": [
            NativeFunction(
                f"inline CUDA_CALLABLE T {call}(const A<T>& buf, {_parameters(indices)}, T value)",
                f"return {call}(&index(buf, {indices}), value);",
            )
            for indices in _INDICES
        ],
    }


_COMMON = """
// gpushim warp.atomic_minmax_old_value (NVIDIA/warp#1058): a float atomic_min or atomic_max swaps until a swap
// succeeds, storing the smaller (larger) of what it found and the value, and returns what that swap replaced
CUDA_CALLABLE inline float gpushim_bits_as_float(int bits) { return __int_as_float(bits); }
CUDA_CALLABLE inline double gpushim_bits_as_float(unsigned long long bits) { return __longlong_as_double(bits); }
CUDA_CALLABLE inline int gpushim_float_as_bits(float value) { return __float_as_int(value); }
CUDA_CALLABLE inline unsigned long long gpushim_float_as_bits(double value)
{
    return (unsigned long long)__double_as_longlong(value);
}

template <bool Lower, typename Type>
CUDA_CALLABLE inline Type gpushim_atomic_extremum(Type* address, Type value)
{
    typedef decltype(gpushim_float_as_bits(value)) Bits;
    Bits* bits = reinterpret_cast<Bits*>(address);
    Bits found = *bits;
    if (Lower ? value < gpushim_bits_as_float(found) : value > gpushim_bits_as_float(found))
    {
        Bits expected;
        do
        {
            expected = found;
            const Type current = gpushim_bits_as_float(expected);
            const Type stored = Lower ? min(current, value) : max(current, value);
            found = atomicCAS(bits, expected, gpushim_float_as_bits(stored));
        } while (found != expected);
    }
    return gpushim_bits_as_float(found);
}
"""

_SCALAR = """
template <typename T>
CUDA_CALLABLE inline T gpushim_atomic_@op(T* address, T value)
{
    return atomic_@op(address, value);
}
"""

_FLOAT = """
CUDA_CALLABLE inline @type gpushim_atomic_@op(@type* address, @type value)
{
    return gpushim_atomic_extremum<@lower>(address, value);
}
"""

_COMPOSITE = """
template <unsigned Length, typename Type>
CUDA_CALLABLE inline vec_t<Length, Type> gpushim_atomic_@op(vec_t<Length, Type>* address, vec_t<Length, Type> value)
{
    vec_t<Length, Type> old;
    for (unsigned i = 0; i < Length; ++i)
        old[i] = gpushim_atomic_@op(&address->c[i], value[i]);
    return old;
}

template <unsigned Rows, unsigned Cols, typename Type>
CUDA_CALLABLE inline mat_t<Rows, Cols, Type> gpushim_atomic_@op(
    mat_t<Rows, Cols, Type>* address, mat_t<Rows, Cols, Type> value)
{
    mat_t<Rows, Cols, Type> old;
    for (unsigned i = 0; i < Rows; ++i)
        for (unsigned j = 0; j < Cols; ++j)
            old.data[i][j] = gpushim_atomic_@op(&address->data[i][j], value.data[i][j]);
    return old;
}
"""

_ARRAY = """
template <template <typename> class A, typename T>
CUDA_CALLABLE inline T gpushim_atomic_@op(const A<T>& buf, @parameters, T value)
{
    return gpushim_atomic_@op(&index(buf, @indices), value);
}
"""


def _code(kinds: list[str]) -> str:
    """The overlay for the release's float ``kinds``: compiled by the CUDA build only."""
    parts = ["#if defined(__CUDA_ARCH__)\nnamespace wp\n{", _COMMON]
    for operation, comparison in _OPERATIONS.items():
        lower = "true" if comparison == "<" else "false"
        floats = [_FLOAT.replace("@type", kind).replace("@lower", lower) for kind in kinds]
        arrays = [_ARRAY.replace("@parameters", _parameters(index)).replace("@indices", index) for index in _INDICES]
        parts.append("".join([_SCALAR, *floats, _COMPOSITE, *arrays]).replace("@op", operation))
    parts.append("}\n")
    parts += [f"#define atomic_{operation} gpushim_atomic_{operation}\n" for operation in _OPERATIONS]
    return "".join(parts) + "#endif\n"


def _loops(source: str) -> list[str]:
    """The float types whose atomic_min ``builtin.h`` declares: float, and double from 1.4.0."""
    squeezed = "".join(source.split())
    return [kind for kind in _LOOPS if f"CUDA_CALLABLE{kind}atomic_min({kind}*address,{kind}val)" in squeezed]


@patch.applier
def _apply(warp, journal):
    context = codegen_and_context(warp)[1]
    for operation in _OPERATIONS:
        for function in builtin_overloads(context, f"atomic_{operation}", bool):
            if function.native_func != f"atomic_{operation}":
                raise TargetMismatch(f"the builtin atomic_{operation} calls {function.native_func}")
    kinds = _loops(native_header(warp, "builtin.h"))
    if "float" not in kinds:
        raise TargetMismatch("warp/native/builtin.h declares no float atomic_min")
    expects: dict[str, list[NativeFunction]] = {"builtin.h": []}
    for operation in _OPERATIONS:
        expects["builtin.h"] += [_released_loop(kind, operation) for kind in kinds]
        for header, functions in _reaching(operation).items():
            expects.setdefault(header, []).extend(functions)
    overlay(
        warp,
        journal,
        expects=expects,
        code=_code(kinds),
        renamed=(),
        salt=_HASH_SALT,
        changes=calling("atomic_min", "atomic_max"),
    )


@patch.prober
def _probe():
    """On cuda:0, atomic_min(a, 0, 1) on 2 and atomic_max(a, 1, 3) on 2 return 2; Warp before 1.11 returns 1 and 3."""
    from gpushim import device

    device.require_a_device()
    import warp

    warp.config.quiet = True
    warp.init()

    def extremes(a, old):
        old[0] = warp.atomic_min(a, 0, 1.0)
        old[1] = warp.atomic_max(a, 1, 3.0)

    extremes.__annotations__ = {"a": warp.array(dtype=float), "old": warp.array(dtype=float)}
    extremes = warp.kernel(extremes)
    a = warp.full(2, 2.0, dtype=float, device="cuda:0")
    old = warp.zeros(2, dtype=float, device="cuda:0")
    warp.launch(extremes, dim=1, inputs=[a, old], device="cuda:0")
    returned = [float(value) for value in old.numpy()]
    if returned != [2.0, 2.0]:
        return f"on cuda:0, atomic_min(a, 0, 1.0) and atomic_max(a, 1, 3.0) on 2.0 return {returned}, not [2.0, 2.0]"
    return None
