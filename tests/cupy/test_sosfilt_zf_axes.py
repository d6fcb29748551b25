"""cupy.sosfilt_zf_axes: ``sosfilt(sos, x, zi=zi)`` of a 1-D ``x`` returns ``zf`` transposed (cupy/cupy#8677).

The host code shapes ``zf``, so everything runs on the CPU: the release's
code on NumPy arrays with its kernels standing still (``sosfilt_corpus``).
What the kernels put in ``zf`` on a device is the business of
``test_gpu_sosfilt_zf_axes.py``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("cupy")

import wrapt

from gpushim.patches.cupy.sosfilt_zf_axes import patch
from tests.cupy import sosfilt_corpus
from tests.cupy.signal_tests import signal_or_skip
from tests.support import applied, gate, record_corpus

GATE = gate(patch)
signal = signal_or_skip()

WITH_ZI = {case for case, (x, _, _, zi) in sosfilt_corpus.cases().items() if zi == "zi" and x in ("(10,)", "(2500,)")}
ONE_D_WITH_ZI = sorted(WITH_ZI)


@GATE.affected_only
def test_needed_zf_of_a_1d_x_is_transposed_without_gpushim():
    outcomes = sosfilt_corpus.run()
    for case in ONE_D_WITH_ZI:
        _, sections, _, _ = sosfilt_corpus.cases()[case]
        assert (case, outcomes[case]["zf"]) == (case, [4, sections])


@GATE.affected_only
def test_effective_zf_of_a_1d_x_has_zi_s_shape_and_is_contiguous(this_patch):
    outcomes = sosfilt_corpus.run()
    for case in ONE_D_WITH_ZI:
        _, sections, _, _ = sosfilt_corpus.cases()[case]
        assert (case, outcomes[case]["zf"], outcomes[case]["c"]) == (case, [sections, 4], True)


@GATE.affected_only
def test_effective_other_calls_are_the_release_s():
    released = sosfilt_corpus.run()
    with applied(patch):
        patched = sosfilt_corpus.run()
    changed = {case for case in released if released[case] != patched[case]}
    assert changed == WITH_ZI


@GATE.unaffected_only
def test_harmless_not_affected_and_apply_iir_sos_is_cupys_own(gpushim_patched):
    assert gpushim_patched.record(patch.id)["state"] == "not-affected"
    assert not isinstance(signal._signaltools.apply_iir_sos, wrapt.ObjectProxy)
    assert signal._signaltools.apply_iir_sos is signal._iir_utils.apply_iir_sos


@GATE.recorded_only
def test_faithful_outcomes_of_the_corpus():
    """Patched old releases record what unpatched 13.4.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, sosfilt_corpus.run)
    assert len(outcomes) == len(sosfilt_corpus.cases()) == 72
