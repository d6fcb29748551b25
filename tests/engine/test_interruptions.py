"""A Ctrl-C, or a signal handler's ``sys.exit()``, wherever it lands in gpushim: it reaches the program as it would
without gpushim, and leaves nothing behind that hangs or bypasses gpushim later.

An interruption is injected by a trace function that raises at the n-th
bytecode (or line) of the frames of one gpushim function, for every n.
"""

from __future__ import annotations

import itertools
import sys
import threading

import pytest

from gpushim.importhook import ImportHooks
from gpushim import locks
from gpushim.locks import ForkSafeRLock
from tests.engine.synthetic import make_patch, registry_for, state_of


def interrupting(where, step, exception=KeyboardInterrupt, unit="opcode"):
    """A trace function that raises ``exception`` at the ``step``-th opcode (or line) run by frames of the code
    objects ``where`` holds."""
    seen = 0

    def local(frame, event, arg):
        nonlocal seen
        if event == unit:
            seen += 1
            if seen == step:
                raise exception
        return local

    def tracer(frame, event, arg):
        if frame.f_code in where:
            frame.f_trace_opcodes = unit == "opcode"
            return local
        return None

    return tracer


def run_interrupted(action, where, step, exception=KeyboardInterrupt, unit="opcode"):
    """Run ``action`` with an interruption at the ``step``-th opcode of the code objects ``where``; whether it
    landed."""
    sys.settrace(interrupting(where, step, exception, unit))
    try:
        action()
    except exception:
        return True
    finally:
        sys.settrace(None)
    return False


def can_be_taken_by_another_thread(lock):
    taken = []

    def take():
        with lock:
            taken.append(True)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    thread.join(2)
    return bool(taken)


def functions_of(module):
    """The code objects of the functions and methods defined in ``module``, properties' included."""
    found = set()
    for value in vars(module).values():
        for member in [value, *vars(value).values()] if isinstance(value, type) else [value]:
            for function in (member, getattr(member, "fget", None)):
                if getattr(function, "__module__", None) == module.__name__ and hasattr(function, "__code__"):
                    found.add(function.__code__)
    return found


def test_a_ctrl_c_in_gpushims_lock_leaves_it_free():
    """Between the lock taken and the with block begun, or the block left and the lock released, is no bytecode."""
    for step in itertools.count(1):
        lock = ForkSafeRLock()

        def hold():
            with lock:
                pass

        if not run_interrupted(hold, functions_of(locks), step):
            break
        assert can_be_taken_by_another_thread(lock), f"held after a Ctrl-C at opcode {step}"
