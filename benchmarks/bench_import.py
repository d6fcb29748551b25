"""Prints what ``import gpushim.auto`` costs in a bare interpreter.

The budget is 5 ms, the median of the cumulative figure ``python -X importtime``
reports for ``gpushim.auto``, importing no GPU or array library.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

RUNS = 21
BUDGET_US = 5000


# Bytecode is written on the first run and read on the others, as in a user's environment.
ENVIRONMENT = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def cumulative_us() -> int:
    stderr = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import gpushim.auto"],
        capture_output=True,
        text=True,
        check=True,
        env=ENVIRONMENT,
    ).stderr
    line = next(line for line in stderr.splitlines() if line.rstrip().endswith("| gpushim.auto"))
    return int(line.split("|")[1])


def main() -> None:
    runs = sorted(cumulative_us() for _ in range(RUNS))
    median = statistics.median(runs)
    print(
        f"import gpushim.auto: median {median / 1000:.2f} ms over {RUNS} runs "
        f"(min {runs[0] / 1000:.2f}, max {runs[-1] / 1000:.2f}; budget {BUDGET_US / 1000:.0f} ms)"
    )


if __name__ == "__main__":
    main()
