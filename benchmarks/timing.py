"""What the benchmarks share: per-call times of interleaved arms, fastest of several batches."""

from __future__ import annotations

import time
from itertools import repeat


def fastest_per_call_us(arms: dict, batch: int, rounds: int) -> dict:
    """Per-call microseconds of each arm, the fastest of ``rounds`` batches, arms interleaved in turn.

    An arm is a function of no argument that readies what is timed and returns
    the function to call ``batch`` times, also without an argument.  On a
    machine whose cores are shared, a batch of a few milliseconds is nearly
    always interrupted, and a minimum over a few dozen of them is off by up
    to a factor 2: keep a batch well under a millisecond and take hundreds.
    """
    best = dict.fromkeys(arms, float("inf"))
    names = list(arms)
    for round in range(rounds):
        # Each round starts with the next arm, so no arm always follows the same other arm.
        shift = round % len(names)
        for name in names[shift:] + names[:shift]:
            call = arms[name]()
            start = time.perf_counter_ns()
            for _ in repeat(None, batch):
                call()
            elapsed = time.perf_counter_ns() - start
            best[name] = min(best[name], elapsed / batch / 1000)
    return best


def print_arms(label: str, times: dict, baseline: str) -> None:
    """One line per arm: its time and its ratio to ``baseline``."""
    print(label)
    for name, us in times.items():
        print(f"  {name:<34} {us:8.3f} us  {us / times[baseline]:5.2f}x {baseline}")
