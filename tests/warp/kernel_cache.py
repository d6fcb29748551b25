"""A kernel script run in fresh interpreters that share one Warp kernel cache directory of their own.

The patches that change the code Warp generates from unchanged source must
keep their builds apart from the release's in that cache: their tests run
the script with and without gpushim, alternately, and read from Warp's own
messages whether each launch compiled its module, found it in the cache or
reused the build already in memory.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.support import run_python

ROOT = Path(__file__).resolve().parents[2]

# Appended to each script: ``run()`` launches its kernel and prints ``@@values ...``.
MAIN = """

if "gpushim" in sys.argv:
    import gpushim.auto
run()
if "in-process" in sys.argv:
    import gpushim

    gpushim.patch()
    run()
    gpushim.unpatch()
    run()
    getattr(KERNEL.module, "mark_modified", KERNEL.module.unload)()  # up to 1.4.0, unload
    run()
"""


def kernel_cache(folder: Path, script: str):
    """``run(*arguments)``: the script's launches in a fresh interpreter, as ``[(values, how the module was loaded)]``.

    ``script`` (dedented) defines ``run()`` and its kernel as ``KERNEL`` and
    sets ``warp.config.quiet = False``.  With the argument ``gpushim`` it is
    run after ``import gpushim.auto``; with ``in-process``, once more patched,
    once more unpatched and once after Warp hashes the module again.
    ``run.builds()`` counts the builds of the script's module in the cache
    directory (in a folder of each release's version from 1.15).
    """
    path = folder / "script.py"
    path.write_text(textwrap.dedent(script) + MAIN)
    cache = folder / "kernels"
    cache.mkdir()

    def builds() -> int:
        return sum(path.is_dir() for path in cache.rglob("wp___main___*"))

    def run(*arguments: str) -> list[tuple[str, str]]:
        before = builds()
        finished = run_python(
            f"import sys; sys.argv = {[str(path), *arguments]!r}; "
            f"sys.path.insert(0, {str(ROOT)!r}); exec(compile(open({str(path)!r}).read(), {str(path)!r}, 'exec'))",
            env={"WARP_CACHE_PATH": str(cache)},
        )
        assert finished.returncode == 0, finished.stderr
        # Warp up to 1.2 says neither: there, a process that added a build compiled its one launch
        unsaid = "compiled" if builds() > before else "cached"
        launches, loaded = [], "reused in memory"
        for line in finished.stdout.splitlines():
            if line.startswith("Module __main__"):
                loaded = "compiled" if "(compiled)" in line else "cached" if "(cached)" in line else unsaid
            elif line.startswith("@@values"):
                launches.append((line[9:], loaded))
                loaded = "reused in memory"
        return launches

    run.builds = builds
    return run


def assert_builds_kept_apart(run, wrong: str, right: str) -> None:
    """Alternate processes without and with gpushim on one cache: each finds its own build, never the other's."""
    assert run()[0][0] == wrong
    assert run("gpushim")[0][0] == right
    assert run() == [(wrong, "cached")]
    assert run("gpushim") == [(right, "cached")]
    assert run.builds() == 2


def assert_rebuilt_in_process(run, wrong: str, right: str) -> None:
    """A module built before ``gpushim.patch()`` in the same process is loaded anew, patched.

    ``unpatch()`` leaves the corrected build in memory until Warp hashes the
    module again; then the released build comes back from the cache.
    """
    launches = run("in-process")
    assert [values for values, _ in launches[:2]] == [wrong, right]
    assert launches[1][1] in ("compiled", "cached")
    assert launches[2:] == [(right, "reused in memory"), (wrong, "cached")]
