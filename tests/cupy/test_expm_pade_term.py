"""cupy.expm_pade_term: ``cupyx.scipy.linalg.expm`` sums ``b[8]*A`` where the Padé approximant needs ``b[8]*A2``.

Everything runs on the CPU with the installed release.  Numbers: the release's
own ``expm`` code, fused function included, on NumPy arrays (the patch
module's ``_expm_on_numpy``), against ``scipy.linalg.expm`` in double
precision.  Kernels: what ``expm``'s call of ``_expm_inner`` would compile,
traced with ``fusion_tracing``.  ``cupyx.scipy.linalg`` needs libcublas to
import, from a CUDA toolkit or the ``nvidia-cublas-cu12`` wheel.  The contract
test covers the probe with gpushim before and after CuPy; this module adds
``cupyx.scipy.linalg`` imported before gpushim.
"""

from __future__ import annotations

import hashlib
import inspect
import sys

import pytest
from packaging.version import Version

from gpushim import ProbeCannotRun
from gpushim.patches.cupy.expm_pade_term import MODULE, _expm_on_numpy, _import_linalg, patch
from tests.support import applied, gate, record_faithful, run_python

GATE = gate(patch)
try:
    _import_linalg()
except (ImportError, ProbeCannotRun) as error:
    pytest.skip(f"cupyx.scipy.linalg cannot be imported: {error}", allow_module_level=True)

import cupy
import numpy
import wrapt

scipy_linalg = pytest.importorskip("scipy.linalg")

from tests.cupy import fusion_tracing


def reference_numpy():
    """The NumPy release that the reference release's matrix cell pins, if any."""
    from matrix.cells import load_cells, reference_of

    for cell in load_cells().values():
        pins = dict(pin.split("==") for pin in cell["install"] if "==" in pin)
        if any(f"{distribution}-{version}" == reference_of(patch.id) for distribution, version in pins.items()):
            return pins.get("numpy")
    return None


# The bytes of expm's results on NumPy arrays depend on NumPy's build of BLAS, so
# they are compared with the reference's only under the same NumPy; and 13.0.0
# lacks the dtype handling of cupy/cupy#8206 (13.1.0), so there only float64
# inputs give 13.5.0's results.  Elsewhere the tests compare accuracy instead.
HANDLES_DTYPES = Version(GATE.release[1]) >= Version("13.1.0")
COMPARABLE = GATE.reference or (GATE.affected and HANDLES_DTYPES and numpy.__version__ == reference_numpy())
recorded = pytest.mark.skipif(not COMPARABLE, reason="not a release whose bytes are compared with the reference's")

IMPORT_LINALG = "from gpushim.patches.cupy.expm_pade_term import _import_linalg; _import_linalg()"
REAL = ("float64", "float32")
COMPLEX = ("complex128", "complex64")
SIZES = (1, 2, 3, 5, 8, 16, 33, 64)
# 1-norms around th13 = 5.37, where expm starts scaling, and far above it; single
# precision stops short of overflowing.
NORMS = {"float64": (1e-3, 0.5, 3.0, 5.37, 20.0, 100.0), "complex128": (1e-3, 0.5, 3.0, 5.37, 20.0, 100.0)}
NORMS.update({"float32": (1e-3, 0.5, 3.0, 5.37, 20.0), "complex64": (1e-3, 0.5, 3.0, 5.37, 20.0)})


def matfuncs():
    return sys.modules[MODULE]


def released_inner():
    """The release's fused ``_expm_inner``, under gpushim's wrapper or not.

    (``cupy.fuse`` gives every fused function a ``__wrapped__`` of its own: the Python function.)
    """
    inner = matfuncs()._expm_inner
    return inner.__wrapped__ if isinstance(inner, wrapt.ObjectProxy) else inner


def random_matrix(seed, n, dtype, norm):
    """A Gaussian matrix of ``dtype`` scaled to the given 1-norm, the same in every cell."""
    rng = numpy.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    if dtype in COMPLEX:
        a = a + 1j * rng.standard_normal((n, n))
    return (a * (norm / numpy.abs(a).sum(axis=0).max())).astype(dtype)


def rotation_generator(t):
    return numpy.array([[0.0, t], [-t, 0.0]])


def corpus():
    """``{case id: input matrix}``: random matrices over sizes, norms and dtypes, and structured ones."""
    cases = {}
    seed = 0
    for dtype, norms in NORMS.items():
        for n in SIZES:
            for norm in norms:
                seed += 1
                cases[f"random-{dtype}-{n}-{norm:g}"] = random_matrix(seed, n, dtype, norm)
    for t in (1.0, 5.0, 10.0, 50.0):
        cases[f"rotation-{t:g}"] = rotation_generator(t)
    cases["zero-3"] = numpy.zeros((3, 3))
    cases["identity-4"] = numpy.eye(4)
    cases["diagonal-5"] = numpy.diag([-3.0, -1.0, 0.0, 2.0, 4.0])
    cases["nilpotent-6"] = numpy.diag(numpy.arange(1.0, 6.0), k=1)
    cases["jordan-4"] = 2.0 * numpy.eye(4) + numpy.eye(4, k=1)
    cases["non-normal-8"] = numpy.triu(random_matrix(1000, 8, "float64", 3.0)) + 40.0 * numpy.eye(8, k=7)
    cases["symmetric-16"] = (lambda m: m + m.T)(random_matrix(1001, 16, "float64", 10.0))
    cases["hermitian-8"] = (lambda m: m + m.conj().T)(random_matrix(1002, 8, "complex128", 10.0))
    cases["int64-4"] = numpy.arange(16, dtype="int64").reshape(4, 4) % 5 - 2
    cases["bool-3"] = numpy.eye(3, dtype=bool)
    cases["complex-rotation-5"] = 1j * rotation_generator(5.0)
    cases["one-1"] = numpy.array([[7.5]])
    cases["float32-rotation-5"] = rotation_generator(5.0).astype("float32")
    return cases


def relative_error(result, a):
    exact = scipy_linalg.expm(a.astype("complex128" if numpy.iscomplexobj(a) else "float64"))
    return float(numpy.linalg.norm(result - exact) / numpy.linalg.norm(exact))


def outcome(a):
    """What the installed ``expm`` computes for ``a``: the exact bytes (as a digest) and the error to SciPy."""
    try:
        result = _expm_on_numpy(matfuncs())(a)
    except Exception as error:
        return {"error": f"{type(error).__name__}: {error}"}
    return {
        "dtype": str(result.dtype),
        "shape": list(result.shape),
        "sha256": hashlib.sha256(numpy.ascontiguousarray(result).tobytes()).hexdigest(),
        "relative_error": relative_error(result, a),
    }


def worst_error(outcomes, dtypes=("float64", "complex128")):
    """The largest relative error over the random cases of the given dtypes."""
    return max(
        found["relative_error"]
        for case, found in outcomes.items()
        if case.startswith("random-") and case.split("-")[1] in dtypes
    )


def reads_a():
    """Whether this release's ``expm`` hands A to ``_expm_inner`` (13.0.0 to 13.4.1 do)."""
    return "A" in inspect.signature(released_inner().func).parameters


def pade_kernel(dtype, n):
    """The kernel ``expm``'s call of ``_expm_inner`` compiles for ``n`` x ``n`` matrices, traced on the CPU.

    The traced function takes the arrays 13.5.0's kernel takes; where ``expm``
    also hands over A (the releases with the bug) it is given None there, so
    a kernel comes out only if the function called never reads A.  13.5.0
    spells complex types ``thrust::complex<T>``, older releases ``complex<T>``
    (cupy/cupy#9040, not this bug); the record uses the older spelling.
    """
    inner = matfuncs()._expm_inner
    if reads_a():

        def call(E, A2, A4, A6, b):
            return inner(E, None, A2, A4, A6, b)
    else:

        def call(E, A2, A4, A6, b):
            return inner(E, A2, A4, A6, b)

    with fusion_tracing.fake_device_memory():
        args = tuple(cupy.empty((n, n), dtype) for _ in range(4)) + (cupy.empty((14,), dtype),)
        traced = fusion_tracing.trace_second_path(call, args, released_inner().name)
    return {
        field: value.replace("thrust::complex<", "complex<") if isinstance(value, str) else value
        for field, value in traced.items()
    }


def kernels():
    return {f"{dtype}-{n}": pade_kernel(dtype, n) for dtype in REAL + COMPLEX for n in (1, 4)}


def probe_in_fresh_interpreter(lines):
    code = "\n".join([*lines, "from gpushim.patches.cupy.expm_pade_term import _probe", "print(_probe())"])
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


@GATE.affected_only
def test_needed_expm_is_off_without_gpushim():
    cases = {case: a for case, a in corpus().items() if case.startswith(("random-float64", "rotation-5"))}
    outcomes = {case: outcome(a) for case, a in cases.items()}
    assert worst_error(outcomes, ("float64",)) > 1e-6
    assert outcomes["rotation-5"]["relative_error"] > 1e-5


@GATE.affected_only
def test_needed_the_release_reads_a_where_13_5_0_reads_a2():
    assert reads_a()
    assert "TypeError" in pade_kernel("float64", 4)["error"]


@GATE.affected_only
def test_effective_with_cupyx_scipy_linalg_imported_before_gpushim():
    assert probe_in_fresh_interpreter(["import cupy", IMPORT_LINALG, "import gpushim.auto"]) == "None"


@GATE.affected_only
def test_effective_waits_for_the_user_to_import_cupyx_scipy_linalg():
    code = "\n".join(
        [
            "import sys, gpushim, gpushim.auto, cupy",
            "state = lambda: next(r['state'] for r in gpushim.status() if r['id'] == 'cupy.expm_pade_term')",
            "print(state(), 'cupyx.scipy.linalg' in sys.modules)",
            IMPORT_LINALG,
            f"inner = sys.modules[{MODULE!r}]._expm_inner",
            "print(state(), type(inner.__wrapped__).__name__, inner.__wrapped__.name)",
        ]
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["pending False", "applied Fusion _expm_inner"]


@recorded
def test_faithful_expm_and_its_kernel(gpushim_patched):
    """Patched old releases record what unpatched 13.5.0 records; the matrix compares the files.

    The record holds the exact bytes of every result, not the errors, which
    depend on SciPy's release as well.
    """
    outcomes = {case: outcome(a) for case, a in corpus().items()}
    assert not [case for case, found in outcomes.items() if "error" in found]
    assert worst_error(outcomes) < 1e-11
    assert worst_error(outcomes, ("float32", "complex64")) < 1e-5
    assert outcomes["rotation-5"]["relative_error"] < 1e-14
    traced = kernels()
    assert not [case for case, found in traced.items() if "error" in found]
    exact = {case: {k: v for k, v in found.items() if k != "relative_error"} for case, found in outcomes.items()}
    record_faithful(patch, {"expm": exact, "kernels": traced})


@pytest.mark.skipif(not GATE.affected or COMPARABLE, reason="compared byte for byte with the reference")
def test_faithful_accuracy_where_the_bytes_are_not_compared(gpushim_patched):
    dtypes = ("float64", "complex128") if HANDLES_DTYPES else ("float64",)
    cases = {case: a for case, a in corpus().items() if case.startswith(tuple(f"random-{d}-" for d in dtypes))}
    outcomes = {case: outcome(a) for case, a in cases.items()}
    assert worst_error(outcomes, dtypes) < 1e-11


@GATE.affected_only
def test_faithful_the_patched_function_is_the_release_s_body_with_a2_for_a(gpushim_patched):
    rng = numpy.random.default_rng(7)
    E, A, A2, A4, A6 = (rng.standard_normal((3, 3)) for _ in range(5))
    b = rng.standard_normal(14)
    inner = matfuncs()._expm_inner
    patched = inner(E, A, A2, A4, A6, b)
    released = inner.__wrapped__.func(E, A2, A2, A4, A6, b)
    for mine, theirs in zip(patched, released):
        assert numpy.array_equal(mine, theirs)
    assert numpy.array_equal(patched[2], b[12] * A6 + b[10] * A4 + b[8] * A2)


@GATE.unaffected_only
def test_harmless_not_affected_and_expm_inner_is_cupys_own(gpushim_patched):
    state = next(r for r in gpushim_patched.status() if r["id"] == patch.id)["state"]
    assert state in ("not-affected", "not-installed")
    inner = matfuncs()._expm_inner
    assert not isinstance(inner, wrapt.ObjectProxy)
    assert type(inner).__module__ == "cupy._core.fusion"


@GATE.affected_only
def test_unpatch_restores_the_released_fused_function():
    released = matfuncs()._expm_inner
    with applied(patch):
        assert matfuncs()._expm_inner is not released
        assert matfuncs()._expm_inner.__wrapped__ is released
    assert matfuncs()._expm_inner is released
