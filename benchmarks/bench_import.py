"""Prints what ``import gpushim.auto`` costs in a bare interpreter, with 5, 50 and 500 patches.

The budget is 5 ms, the median of the cumulative figure ``python -X importtime``
reports for ``gpushim.auto``, importing no GPU or array library, however many
patches there are.  The larger catalogues are a temporary copy of the
installed package with generated patch modules in a library folder of their
own, put first on ``PYTHONPATH``.  Then the same with patches from another
distribution (found through its entry point), and with 0, 1,000 and 10,000
distributions installed beside gpushim, half of them declaring entry points:
the first process reads each one's ``entry_points.txt`` and remembers which
declare patches (:mod:`gpushim.entrycache`, in a cache folder of the
benchmark's own), the others read only those.  The figure to watch is what
each distribution adds to those others: the goal is flat, 10,000 at most 1.10
times as long as none.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gpushim
import gpushim.patches

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import title  # noqa: E402

RUNS = 21
BUDGET_US = 5000
SIZES = (50, 500)
DISTRIBUTIONS = (1_000, 10_000)

GENERATED = """from gpushim import Patch

patch = Patch(id="generated.patch_{index}", affected="<1", fixed_in="1", issue="-", fix="-", summary="-")
"""


def copy_with_generated_patches(root: Path, total: int, template: str = GENERATED) -> Path:
    """A site directory holding gpushim with ``total`` patches in all, the added ones from ``template``."""
    site = root / f"site{total}"
    shutil.copytree(Path(gpushim.__file__).parent, site / "gpushim", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.rmtree(site / "gpushim" / "patches", ignore_errors=True)
    shutil.copytree(Path(gpushim.patches.__file__).parent, site / "gpushim" / "patches")
    folder = site / "gpushim" / "patches" / "generated"
    folder.mkdir()
    (folder / "__init__.py").write_text('TARGET = "gpushim_generated_target"\nDISTRIBUTIONS = ("gpushim-generated",)\n')
    for index in range(total - len(gpushim.registry().ids)):
        (folder / f"patch_{index}.py").write_text(template.format(index=index))
    return site


def site_with_distributions(root: Path, total: int, patches: int = 0, template: str = GENERATED) -> Path:
    """A site directory of ``total`` distributions, one of them adding ``patches`` patches if asked."""
    site = root / f"distributions{total}-{patches}"
    site.mkdir(parents=True)
    for index in range(total):
        dist_info = site / f"bench_distribution_{index}-1.0.dist-info"
        dist_info.mkdir(parents=True)
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: bench-distribution-{index}\nVersion: 1.0\n")
        if index % 2:
            (dist_info / "entry_points.txt").write_text(f"[console_scripts]\nbench{index} = bench{index}:main\n")
        if index == 0 and patches:
            (dist_info / "entry_points.txt").write_text("[gpushim.patches]\nbench = bench_patches\n")
            folder = site / "bench_patches" / "generated"
            folder.mkdir(parents=True)
            (folder.parent / "__init__.py").write_text("")
            (folder / "__init__.py").write_text(
                'TARGET = "gpushim_generated_target"\nDISTRIBUTIONS = ("gpushim-generated",)\n'
            )
            for number in range(patches):
                (folder / f"patch_{number}.py").write_text(template.format(index=number))
    return site


def cumulative_us(site: Path | None) -> int:
    # Bytecode is written on the first run and read on the others, as in a user's environment; so is the cache.
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    if site is not None:
        environment["PYTHONPATH"] = str(site)
        environment["XDG_CACHE_HOME"] = str(site.parent / "cache")
    stderr = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import gpushim.auto"],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    ).stderr
    line = next(line for line in stderr.splitlines() if line.rstrip().endswith("| gpushim.auto"))
    return int(line.split("|")[1])


def report(label: str, site: Path | None) -> None:
    """Print the figures of ``import gpushim.auto`` with ``site`` on the path."""
    runs = sorted(cumulative_us(site) for _ in range(RUNS))
    print(
        f"import gpushim.auto, {label}: median {statistics.median(runs) / 1000:.2f} ms over {RUNS} runs "
        f"(min {runs[0] / 1000:.2f}, max {runs[-1] / 1000:.2f}; budget {BUDGET_US / 1000:.0f} ms)"
    )


def main() -> None:
    print(title(__file__, __doc__))
    own = len(gpushim.registry().ids)
    report(f"{own} patches", None)
    with tempfile.TemporaryDirectory() as root:
        for total in SIZES:
            report(f"{total} patches", copy_with_generated_patches(Path(root), total))
        for patches in (50, 500):
            label = f"{own} + {patches} patches of another distribution"
            report(label, site_with_distributions(Path(root), 1, patches))
        report_distributions(Path(root), own)


def report_distributions(root: Path, own: int) -> None:
    """Print the figures with 0, 1,000 and 10,000 distributions, the arms interleaved, and what each adds."""
    sites = {total: site_with_distributions(root, total) for total in (0, *DISTRIBUTIONS)}
    first = {total: cumulative_us(settle(site)) for total, site in sites.items()}
    runs: dict[int, list[int]] = {total: [] for total in sites}
    for _ in range(RUNS):  # interleaved, so that the machine's load changes each arm alike
        for total, site in sites.items():
            runs[total].append(cumulative_us(site))
    for total, times in runs.items():
        times.sort()
        print(
            f"import gpushim.auto, {own} patches, {total:,} distributions on PYTHONPATH: median "
            f"{statistics.median(times) / 1000:.2f} ms over {RUNS} runs (min {times[0] / 1000:.2f}, max "
            f"{times[-1] / 1000:.2f}; the first, finding them new: {first[total] / 1000:.2f})"
        )
    bare = runs[0][0]
    for total in DISTRIBUTIONS:
        least = runs[total][0]
        print(
            f"  each of {total:,} distributions adds {(least - bare) / total * 1000:.0f} ns (minima); "
            f"{least / bare:.2f}x as long as none (goal: at most 1.10); the first run "
            f"{(first[total] - first[0]) / total:.1f} µs each"
        )


def settle(site: Path) -> Path:
    """``site``, dated a minute back, as a directory installed into before the program started: one changed in the
    last two seconds is read anew each time."""
    past = time.time_ns() - 60_000_000_000
    os.utime(site, ns=(past, past))
    return site


if __name__ == "__main__":
    main()
