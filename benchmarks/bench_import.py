"""Prints what ``import gpushim.auto`` costs in a bare interpreter, with 5, 50 and 500 patches.

The budget is 5 ms, the median of the cumulative figure ``python -X importtime``
reports for ``gpushim.auto``, importing no GPU or array library, however many
patches there are.  The larger catalogues are a temporary copy of the
installed package with generated patch modules in a library folder of their
own, put first on ``PYTHONPATH``.  Then the same with patches from another
distribution (found through its entry point), and with 0, 1,000 and 10,000
distributions installed beside gpushim, half of them declaring entry points:
finding other distributions' patches reads each one's ``entry_points.txt``,
and the figure to watch is what each distribution adds (issue 43 asks for it
flat).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
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
    # Bytecode is written on the first run and read on the others, as in a user's environment.
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    if site is not None:
        environment["PYTHONPATH"] = str(site)
    stderr = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import gpushim.auto"],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    ).stderr
    line = next(line for line in stderr.splitlines() if line.rstrip().endswith("| gpushim.auto"))
    return int(line.split("|")[1])


def report(label: str, site: Path | None) -> float:
    """Print the figures of ``import gpushim.auto`` with ``site`` on the path; the minimum, in µs."""
    runs = sorted(cumulative_us(site) for _ in range(RUNS))
    print(
        f"import gpushim.auto, {label}: median {statistics.median(runs) / 1000:.2f} ms over {RUNS} runs "
        f"(min {runs[0] / 1000:.2f}, max {runs[-1] / 1000:.2f}; budget {BUDGET_US / 1000:.0f} ms)"
    )
    return runs[0]


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
        bare = report(f"{own} patches, 0 distributions on PYTHONPATH", site_with_distributions(Path(root), 0))
        for total in DISTRIBUTIONS:
            site = site_with_distributions(Path(root), total)
            least = report(f"{own} patches, {total:,} distributions on PYTHONPATH", site)
            print(f"  each distribution adds {(least - bare) / total:.1f} µs (minima)")


if __name__ == "__main__":
    main()
