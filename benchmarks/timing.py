"""What the benchmarks share: per-call times of interleaved arms, fastest of many short batches."""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import gpushim
from gpushim.states import APPLIED, NOT_AFFECTED


def title(path: str, doc: str) -> str:
    """A benchmark's first lines: what it measures, and when, with which gpushim and how many patches."""
    when = f"measured {datetime.date.today().isoformat()} with gpushim {gpushim.__version__}"
    load = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} processors"
    return f"{Path(path).name}: {doc.splitlines()[0]}\n{when}, {len(gpushim.registry().ids)} patches, {load}"


def applied_here(patch) -> dict | None:
    """Apply ``patch`` and return its status record; None, saying so, where the release does not need it."""
    gpushim.patch(patch.id)
    record = gpushim.record(patch.id)
    if record["state"] == NOT_AFFECTED:
        print(f"{patch.id} is not-affected here ({record['reason']}): nothing to measure")
        return None
    if record["state"] != APPLIED:
        raise SystemExit(f"{patch.id} is {record['state']} here ({record['reason']})")
    return record


def ready(functions: dict) -> dict:
    """Arms for :func:`fastest_per_call_us` that time ``functions`` as they are."""
    return {name: (lambda function=function: function) for name, function in functions.items()}


def fastest_per_call_us(arms: dict, make_arguments, batch: int, rounds: int) -> dict:
    """Per-call microseconds of each arm, the fastest of ``rounds`` batches, arms interleaved in turn.

    An arm is a function of no argument that readies what is timed and
    returns the function to call; each call gets a fresh tuple of arguments
    from ``make_arguments()``, made before the batch is timed.  On a machine
    whose cores are shared, a batch of a few milliseconds is nearly always
    interrupted, and a minimum over a few dozen of them is off by up to a
    factor 2: keep a batch well under a millisecond and take hundreds.
    """
    best = dict.fromkeys(arms, float("inf"))
    names = list(arms)
    for round in range(rounds):
        # Each round starts with the next arm, so no arm always follows the same other arm.
        shift = round % len(names)
        for name in names[shift:] + names[:shift]:
            function = arms[name]()
            calls = [make_arguments() for _ in range(batch)]
            start = time.perf_counter_ns()
            for arguments in calls:
                function(*arguments)
            elapsed = time.perf_counter_ns() - start
            del calls
            best[name] = min(best[name], elapsed / batch / 1000)
    return best


def print_arms(label: str, times: dict, baseline: str) -> None:
    """One line per arm: its time and its ratio to ``baseline``."""
    print(label)
    for name, us in times.items():
        print(f"  {name:<34} {us:8.3f} us  {us / times[baseline]:5.2f}x {baseline}")


def print_wrapped(label: str, times: dict) -> None:
    """The library's function, under a do-nothing wrapt wrapper and patched, then what each adds."""
    own, wrapper, patched = times["library"], times["do-nothing wrapper"], times["patched"]
    print(f"{label}: library {own:.2f} us, under a do-nothing wrapt wrapper {wrapper:.2f} us, patched {patched:.2f} us")
    print(
        f"  added per call: {patched - own:.2f} us in all, of which wrapt {wrapper - own:.2f} us "
        f"and the patch's own code {patched - wrapper:.2f} us"
    )


def print_sites(label: str, times: dict) -> None:
    """The four arms of a site, then what wrapt, gpushim's wrapper type and the patch's own code add."""
    unpatched, wrapt, gpushim, patched = (
        times["unpatched"],
        times["do-nothing wrapt"],
        times["do-nothing gpushim"],
        times["patched"],
    )
    print(
        f"{label}: unpatched {unpatched:.3f} us, do-nothing wrapt {wrapt:.3f} us, "
        f"do-nothing gpushim {gpushim:.3f} us, patched {patched:.3f} us"
    )
    print(
        f"    added {patched - unpatched:+.3f} us: wrapt {wrapt - unpatched:+.3f}, gpushim's wrapper type "
        f"{gpushim - wrapt:+.3f}, the patch's own code {patched - gpushim:+.3f}; "
        f"beyond plain wrapt {patched - wrapt:+.3f} us (goal: at most 0.25)"
    )
