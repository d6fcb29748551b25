"""Upstream reproducers run as scripts in a fresh interpreter, with or without gpushim, for the GPU tests.

Warp reads a kernel's source from its file, so a reproducer that defines
kernels or structs is written to a file and executed from there, not handed
to ``python -c``.  Each run gets a kernel cache directory of its own, so that
a build from another run (patched or not) is never what a test sees.
"""

from __future__ import annotations

from pathlib import Path

from tests.support import answer_in_fresh_python


def run_script(code: str, folder: Path, gpushim: bool, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` (which sets ``result``, a JSON-able dict) as a script file in a fresh interpreter.

    ``gpushim``: whether ``import gpushim.auto`` comes first; ``env``, more of its environment (a
    ``GPUSHIM_ENABLE``).  Returns ``result``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / ("with_gpushim.py" if gpushim else "without_gpushim.py")
    prelude = "import gpushim.auto\n" if gpushim else ""
    script.write_text(f"{prelude}{code}\n")
    return answer_in_fresh_python(
        f"path = {str(script)!r}\nexec(compile(open(path).read(), path, 'exec'))",
        "result",
        {"WARP_CACHE_PATH": str(folder / f"kernels-{script.stem}"), **(env or {})},
    )
