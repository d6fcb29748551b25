"""The proofs every overlay patch of Warp owes, for its test module to take as a class: ``class TestX(OverlayChecks)``.

An overlay (``patches/warp/_overlay.py``) compiles corrected native code into
every module Warp builds; its tests are its corpus and these checks.  The
subclass sets:

- ``patch`` and ``gate`` (``tests.support.gate(patch)``, called at the top
  of the module, which skips it where Warp is not installed);
- ``corpus``, the test module's name, whose ``run_corpus()`` runs in fresh
  interpreters, and ``kernel``, the corpus kernel the CUDA build compiles;
- ``fixed``, the corpus' outcomes on the fixed release, and ``released``,
  those that differ on the affected ones;
- ``script``, ``wrong`` and ``right``: a kernel script for
  :func:`tests.warp.kernel_cache.kernel_cache` and the values it prints
  without and with the fix.

The proofs run at the ends of the patch's range in the matrix only, the
faithful corpus there and on the reference.
"""

from __future__ import annotations

import sys

import pytest

from tests.support import corpus_in_fresh_python, record_faithful
from tests.warp.kernel_cache import assert_builds_kept_apart, assert_rebuilt_in_process, kernel_cache
from tests.warp.nvrtc import assert_compiles_for_cuda


class OverlayChecks:
    patch = gate = kernel = None
    corpus = script = wrong = right = ""
    fixed: dict = {}
    released: dict = {}

    def at_an_end(self):
        if not self.gate.at_an_end:
            pytest.skip(f"{' '.join(self.gate.release)} is not the lowest or highest affected release of the matrix")

    @pytest.fixture(scope="class")
    def cache_script(self, tmp_path_factory):
        return kernel_cache(tmp_path_factory.mktemp(self.patch.id), self.script)

    def test_needed_the_corpus_shows_the_bug_without_gpushim(self):
        self.at_an_end()
        outcomes, state = corpus_in_fresh_python(self.corpus, self.patch, "")
        assert state == "inactive"
        assert outcomes == {**self.fixed, **self.released}

    def test_effective_with_gpushim_imported_before_warp(self):
        self.at_an_end()
        outcomes, state = corpus_in_fresh_python(self.corpus, self.patch, "import gpushim.auto")
        assert (outcomes, state) == (self.fixed, "applied")

    def test_a_kernel_built_by_an_earlier_process_without_gpushim_is_not_reused(self, cache_script):
        self.at_an_end()
        assert_builds_kept_apart(cache_script, self.wrong, self.right)

    def test_a_kernel_built_in_this_process_before_gpushim_patch_is_rebuilt(self, cache_script):
        self.at_an_end()
        assert_rebuilt_in_process(cache_script, self.wrong, self.right)

    def test_the_cuda_build_compiles_the_corrected_module_with_nvrtc(self, request):
        self.at_an_end()
        request.getfixturevalue("gpushim_patched")
        import warp

        assert_compiles_for_cuda(warp, self.kernel, self.patch)

    def test_harmless_outside_the_range_warps_module_headers_hold_none_of_its_code(self, request):
        if self.gate.affected:
            pytest.skip(f"{' '.join(self.gate.release)} has the bug")
        request.getfixturevalue("gpushim_patched")
        import warp

        context = sys.modules[warp.launch.__module__]
        codegen = sys.modules[context.__name__.rpartition(".")[0] + ".codegen"]
        assert not any(self.patch.id in getattr(codegen, name) for name in ("cpu_module_header", "cuda_module_header"))

    def test_faithful_corpus_matches_the_fixed_release(self, request):
        """Recorded patched at the range's ends and unpatched on the reference; the matrix compares the files."""
        if not self.gate.records:
            pytest.skip(f"{' '.join(self.gate.release)} is neither an end of the range nor the reference")
        if self.gate.affected:
            request.getfixturevalue("gpushim_patched")
        outcomes = sys.modules[self.corpus].run_corpus()
        record_faithful(self.patch, outcomes)
        assert outcomes == self.fixed
