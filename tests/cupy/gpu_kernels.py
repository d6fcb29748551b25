"""Fused functions compiled and run on a CUDA device in a fresh interpreter, and the CUDA source CuPy compiled.

CuPy writes the source of every kernel it compiles next to the binary in its
cache directory when ``CUPY_CACHE_SAVE_CUDA_SOURCE=1``; an empty cache
directory per run makes every kernel a fresh compilation, so the ``.cu`` files
found there afterwards are exactly what nvrtc was given.

``FIXED_*`` are the code CuPy 13.4.1, the first fixed release of both fusion
bugs, writes for the seeds of cupy/cupy#8536 and cupy/cupy#9005: traced with
``tests/cupy/fusion_tracing.py`` from cupy-cuda12x 13.4.1 (NumPy 2.2.6) on the
CPU, for the dtypes and shapes the tests below compile.  Only what does not
depend on string hashing is kept: the first generator's ``operation`` and the
second one's kernel body.
"""

from __future__ import annotations

from pathlib import Path

from tests.support import answer_in_fresh_python

FIXED_SCALAR_OPERATION = """\
// 3 operations
float v3;
float v4;
const long long v5 = 1ll;
float v6;
float v0_0; float v0_1; float v0_2;
float v1_0; float v1_1; float v1_2;
float v2_0; float v2_1; float v2_2;
// op  # 0
v0_0 = static_cast< float >(v1);
v0_1 = static_cast< float >(v0);
v0_2 = static_cast< float >(v3);
cupy_multiply(v0_0, v0_1, v0_2);
v3 = static_cast< float >(v0_2);
// op  # 1
v1_0 = static_cast< float >(v3);
v1_1 = static_cast< float >(v2);
v1_2 = static_cast< float >(v4);
cupy_multiply(v1_0, v1_1, v1_2);
v4 = static_cast< float >(v1_2);
// op  # 2
v2_0 = static_cast< float >(v5);
v2_1 = static_cast< float >(v4);
v2_2 = static_cast< float >(v6);
cupy_add(v2_0, v2_1, v2_2);
v6 = static_cast< float >(v2_2);
v7 = v6;"""

FIXED_WHERE_INF_BODY = """\
{
  CUPY_FOR(i, ind0_4.size()) {
    ind0_4.set(i);
    ind1_1.set(i);
    ind3_5.set(i);
    bool v0_4 = a0_4[ind0_4.get()];
    double v2 = CUDART_INF;
    double v1_1 = a1_1[ind1_1.get()];
    double v3_5;
    cupy_where_0(v0_4, v2, v1_1, v3_5);
    a3_5[ind3_5.get()] = v3_5;
  }
}"""


def run_on_device(code: str, cache: Path, gpushim: bool) -> tuple[dict, list[str]]:
    """Run ``code`` (which sets ``result``, a JSON-able dict) in a fresh interpreter.

    ``gpushim``: whether ``import gpushim.auto`` comes first.  Returns
    ``result`` and the CUDA sources CuPy compiled meanwhile.
    """
    cache.mkdir(parents=True, exist_ok=True)
    prelude = "import gpushim.auto\n" if gpushim else ""
    env = {"CUPY_CACHE_DIR": str(cache), "CUPY_CACHE_SAVE_CUDA_SOURCE": "1", "CUPY_CACHE_IN_MEMORY": "0"}
    result = answer_in_fresh_python(f"{prelude}{code}", "result", env)
    sources = [path.read_text() for path in sorted(cache.rglob("*.cu"))]
    return result, sources
