"""cupy.interp_spline_temporary: the temporary ``make_interp_spline`` gives its de Boor kernel (cupy/cupy#8388).

The allocation is host code, so everything here runs on the CPU: each case
runs the release's ``make_interp_spline`` on NumPy arrays (the patch module's
``on_numpy``) up to its first ``d_boor`` launch, which records the
temporary's size and what the kernel writes, or up to its solve, which
records the right-hand side; the splines of ``k=0`` and ``k=1`` and the
exceptions of the checks are host code too.  That the kernel's writes land
past the temporary on a device is ``test_gpu_interp_spline_temporary.py``'s.
"""

from __future__ import annotations

import numpy
import pytest

pytest.importorskip("cupy")

from gpushim.patches.cupy.interp_spline_temporary import Stop, on_numpy, patch
from gpushim.wrappers import is_wrapper
from tests.cupy.signal_tests import cupyx_or_skip
from tests.support import applied, gate, record_corpus

GATE = gate(patch)
interpolate = cupyx_or_skip("cupyx.scipy.interpolate")

DEGREES = (0, 1, 2, 3, 5, 32)
POINTS = (1, 2, 4, 5, 8, 33)


def derivatives(k):
    """``k - 1`` conditions, orders 1, 2, ... at each end, as many as the default knots of ``bc_type`` leave."""
    return [(order, 0.0) for order in range(1, k // 2 + 1)], [(order, 0.0) for order in range(1, (k - 1) // 2 + 1)]


# name: the bc_type of degree k
CONDITIONS = {
    "None": lambda k: None,
    "clamped": lambda k: "clamped",
    "natural": lambda k: "natural",
    "not-a-knot": lambda k: "not-a-knot",
    "periodic": lambda k: "periodic",
    "k-1 derivatives": derivatives,
    "first left, second right": lambda k: ([(1, 0.0)], [(2, 0.0)]),
    "unknown name": lambda k: "bogus",
    "not a pair": lambda k: 5,
}
# name: y of x
ORDINATES = {
    "1-D": lambda x: x**2,
    "(n, 2)": lambda x: numpy.stack([x, -x], axis=1),
    "complex": lambda x: x + 1j * x,
}
_TWO = [(1, 0.0), (2, 0.0)]
# name: (x, y, k, t, bc_type), knots of the caller's
KNOTS = {
    "one point, k=3, two coefficients": ([0.0], [1.0], 3, [0.0] * 4 + [1.0] * 2, ([(1, 0.0)], None)),
    "one point, k=3, three coefficients": ([0.0], [1.0], 3, [0.0] * 4 + [1.0] * 3, ([(1, 0.0)], [(1, 0.0)])),
    "two points, k=5, six coefficients": ([0.0, 1.0], [1.0, 2.0], 5, [0.0] * 6 + [1.0] * 6, (_TWO, _TWO)),
    "one side empty": ([0.0], [1.0], 3, [0.0] * 4 + [1.0] * 2, ([(1, 0.0)], [])),
    "too few knots": ([0.0, 1.0], [1.0, 2.0], 3, [0.0] * 4 + [1.0] * 1, "clamped"),
}


def cases():
    """``{case: (x, y, k, t, bc_type)}``: degrees, points, conditions and ordinates on default knots; given knots."""
    found = {}
    for k in DEGREES:
        for n in POINTS:
            x = numpy.arange(float(n))
            for condition, bc_type in CONDITIONS.items():
                for ordinate, y in ORDINATES.items():
                    found[f"k={k} n={n} bc={condition} y={ordinate}"] = (x, y(x), k, None, bc_type(k))
    for name, (x, y, k, t, bc_type) in KNOTS.items():
        found[f"knots: {name}"] = (numpy.array(x), numpy.array(y), k, numpy.array(t), bc_type)
    return found


def described(found):
    """JSON of what a case gives: arrays as shape, dtype and each value's repr."""
    if isinstance(found, numpy.ndarray):
        return {
            "shape": list(found.shape),
            "dtype": str(found.dtype),
            "values": [repr(v) for v in found.ravel().tolist()],
        }
    if isinstance(found, dict):
        return {key: described(value) for key, value in found.items()}
    return found


def run():
    """``{case: outcome}``: the d_boor launch's sizes, the solve's right-hand side, the spline, or the exception."""
    outcomes = {}
    with on_numpy(interpolate):
        for case, (x, y, k, t, bc_type) in cases().items():
            try:
                outcome = described(interpolate.make_interp_spline(x, y, k=k, t=t, bc_type=bc_type))
            except Stop as stop:
                outcome = described(stop.args[0])
            except Exception as error:
                outcome = f"{type(error).__name__}: {error}"
            outcomes[case] = outcome
    return outcomes


def launches(outcomes):
    """``{case: (temporary's bytes, bytes written)}`` of the cases that launch d_boor."""
    return {
        case: (outcome["d_boor temporary"], outcome["d_boor writes"])
        for case, outcome in outcomes.items()
        if isinstance(outcome, dict) and "d_boor temporary" in outcome
    }


@GATE.affected_only
def test_needed_four_clamped_points_of_a_cubic_get_48_bytes_for_56_written_without_gpushim():
    assert launches(run())["k=3 n=4 bc=clamped y=1-D"] == (48, 56)


@GATE.affected_only
def test_needed_the_temporary_is_short_from_k_3_to_k_32_without_gpushim():
    short = {case for case, (temporary, written) in launches(run()).items() if temporary < written}
    assert "k=32 n=33 bc=k-1 derivatives y=1-D" in short
    assert "knots: one point, k=3, two coefficients" in short
    assert "knots: two points, k=5, six coefficients" in short


@GATE.affected_only
def test_effective_every_temporary_holds_what_the_kernel_writes(this_patch):
    found = launches(run())
    assert len(found) > 100
    assert {case: written for case, (_, written) in found.items()} == {
        case: temporary for case, (temporary, _) in found.items()
    }


@GATE.affected_only
def test_effective_only_the_temporary_changes():
    released = run()
    with applied(patch):
        patched = run()
    changed = {case for case in released if released[case] != patched[case]}
    assert changed == {case for case, (temporary, written) in launches(released).items() if temporary != written}


@GATE.unaffected_only
def test_harmless_not_affected_and_make_interp_spline_is_cupys_own(gpushim_patched):
    assert gpushim_patched.record(patch.id)["state"] == "not-affected"
    for owner in (interpolate, interpolate._bspline2, interpolate._rgi):
        assert not is_wrapper(owner.make_interp_spline)
        assert owner.make_interp_spline is interpolate._bspline2.make_interp_spline


@GATE.recorded_only
def test_faithful_outcomes_of_the_corpus():
    """Patched old releases record what unpatched 13.3.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, run)
    assert len(outcomes) == len(cases()) == 977
