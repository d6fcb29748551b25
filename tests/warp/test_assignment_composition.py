"""The four patches of Warp's assignments, applied together, give the fixed releases' results on each band.

warp.inplace_adjoints, warp.augassign_mul_div, warp.augassign_single_evaluation
and warp.component_write_adjoint all wrap Warp's generators of assignments.
One kernel holds statements of each one's forms, every right side a call that
counts itself; it runs on the CPU under a tape seeded with ones.  With every
patch applied, each statement must give 1.14.0's values and gradients (the
first release with all four fixes) and run its call once per thread, but where
its patch is declared not backported.  The kernel lives in this file's Warp
module, built once per cell, on the ends of the bands where two or more of
the patches apply, on the last release of warp.inplace_adjoints and on
1.14.0.  No ``from __future__ import annotations``: Warp reads the kernels'
annotations as types.
"""

import pytest

import gpushim
from gpushim.patches.warp.augassign_mul_div import patch as mul_div
from gpushim.patches.warp.augassign_single_evaluation import patch as single_evaluation
from gpushim.patches.warp.component_write_adjoint import patch as component_write
from gpushim.patches.warp.inplace_adjoints import patch as inplace
from gpushim.states import NOT_BACKPORTED
from tests.support import gate

GATE = gate(inplace)

# 1.3.3: warp.inplace_adjoints alone, among the others' forms as released; 1.4.1 (1.4.0 has no cell):
# warp.augassign_mul_div and warp.augassign_single_evaluation; 1.6.0 and 1.12.0:
# warp.augassign_single_evaluation and warp.component_write_adjoint; 1.14.0: none, all fixed.
CELLS = ("1.3.3", "1.4.1", "1.6.0", "1.12.0", "1.14.0")
pytestmark = pytest.mark.skipif(
    GATE.release[1] not in CELLS, reason="run on the ends of the bands where two or more of the patches apply"
)

import numpy as np  # noqa: E402
import warp as wp  # noqa: E402

from tests.warp.counted_calls import counted, cpu, launch_taped  # noqa: E402

wp.config.quiet = True

# Each statement, the patch whose form it is, in the order of its slot in ``calls`` and its column of ``x``.
STATEMENTS = {
    "a[i] += f(2x)": inplace,
    "b[i] -= f(3x)": inplace,
    "v[1] = f(5x)": inplace,
    "c[i] *= f(x)": mul_div,
    "d[i] /= f(x)": mul_div,
    "w[1] *= f(x)": single_evaluation,
    "t += f(x)": single_evaluation,
    "y[i].y = f(7x)": component_write,
}


@wp.kernel
def assignments(
    calls: wp.array(dtype=wp.int32),
    x: wp.array2d(dtype=float),
    a: wp.array(dtype=float),
    b: wp.array(dtype=float),
    c: wp.array(dtype=float),
    d: wp.array(dtype=float),
    y: wp.array(dtype=wp.vec3),
    vw: wp.array2d(dtype=float),
):
    i = wp.tid()
    a[i] += counted(calls, 0, 2.0 * x[i, 0])
    b[i] -= counted(calls, 1, 3.0 * x[i, 1])
    v = wp.vec3(1.0, 2.0, 3.0)
    v[1] = counted(calls, 2, 5.0 * x[i, 2])
    c[i] *= counted(calls, 3, x[i, 3])
    d[i] /= counted(calls, 4, x[i, 4])
    w = wp.vec3(1.0, 2.0, 3.0)
    w[1] *= counted(calls, 5, x[i, 5])
    t = wp.float32(1.0)
    t += counted(calls, 6, x[i, 6])
    y[i].y = counted(calls, 7, 7.0 * x[i, 7])
    vw[i, 0] = v[1]
    vw[i, 1] = w[1]
    vw[i, 2] = t


def run_kernel() -> dict:
    """Per statement: its calls, the value it left and x's gradient through it, per thread."""
    wp.init()
    x = cpu(np.arange(2.0, 18.0).reshape(2, 8))
    outputs = [cpu([10.0, 20.0]), cpu([30.0, 40.0]), cpu([5.0, 6.0]), cpu([8.0, 9.0])]
    y = cpu(np.zeros((2, 3)), wp.vec3)
    vw = cpu(np.zeros((2, 3)))
    forward = launch_taped(assignments, len(STATEMENTS), [x, *outputs, y, vw], [*outputs, y, vw])
    a, b, c, d = (array.numpy().tolist() for array in outputs)
    values = [a, b, vw.numpy()[:, 0].tolist(), c, d, vw.numpy()[:, 1].tolist(), vw.numpy()[:, 2].tolist()]
    values.append(y.numpy()[:, 1].tolist())
    gradients = x.grad.numpy().T.tolist()
    return {
        statement: {"calls": forward[slot], "value": values[slot], "x.grad": gradients[slot]}
        for slot, statement in enumerate(STATEMENTS)
    }


# What 1.14.0 gives, each call run once per thread: x[i, k] is 2 + 8i + k.  The backward pass of c[i] *= f(x)
# and d[i] /= f(x) reads the element as the forward pass left it: x's gradient through them is c[i]'s new value.
FIXED = {
    "a[i] += f(2x)": {"calls": 2, "value": [14.0, 40.0], "x.grad": [2.0, 2.0]},
    "b[i] -= f(3x)": {"calls": 2, "value": [21.0, 7.0], "x.grad": [-3.0, -3.0]},
    "v[1] = f(5x)": {"calls": 2, "value": [20.0, 60.0], "x.grad": [5.0, 5.0]},
    "c[i] *= f(x)": {"calls": 2, "value": [25.0, 78.0], "x.grad": [25.0, 78.0]},
    "d[i] /= f(x)": {"calls": 2, "value": [8.0 / 6.0, 9.0 / 14.0], "x.grad": [-8.0 / 6.0 / 36.0, -9.0 / 14.0 / 196.0]},
    "w[1] *= f(x)": {"calls": 2, "value": [14.0, 30.0], "x.grad": [2.0, 2.0]},
    "t += f(x)": {"calls": 2, "value": [9.0, 17.0], "x.grad": [1.0, 1.0]},
    "y[i].y = f(7x)": {"calls": 2, "value": [63.0, 119.0], "x.grad": [7.0, 7.0]},
}


def test_with_every_patch_applied_each_statement_gives_the_fixed_releases_results(gpushim_patched):
    outcomes = run_kernel()
    kept = [statement for statement, patch in STATEMENTS.items() if gpushim.record(patch.id)["state"] != NOT_BACKPORTED]
    assert {statement: outcomes[statement] for statement in kept} == {
        statement: {key: pytest.approx(fixed) for key, fixed in FIXED[statement].items()} for statement in kept
    }
