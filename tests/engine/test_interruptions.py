"""A Ctrl-C, or a signal handler's ``sys.exit()``, wherever it lands in gpushim: it reaches the program as it would
without gpushim, and leaves nothing behind that hangs or bypasses gpushim later.

An interruption is injected by a trace function that raises at the n-th
bytecode (or line) run by some of gpushim's functions, for every n.  It
reaches places a signal cannot (a ``with`` statement's call of its lock's
``__exit__``), so the functions interrupted hold no lock of their own.
"""

from __future__ import annotations

import itertools
import sys
import threading

import pytest

import gpushim.catalogue
import gpushim.engine
import gpushim.gate
import gpushim.importhook
import gpushim.locks
from gpushim.importhook import ImportHooks
from gpushim.locks import ForkSafeRLock
from tests.engine.synthetic import make_patch, registry_for


def interrupting(where, step, exception=KeyboardInterrupt, unit="opcode", landed=None):
    """A trace function that raises ``exception`` at the ``step``-th opcode (or line) run by frames of the code
    objects ``where`` holds; it appends to ``landed`` when it does."""
    seen = 0

    def local(frame, event, arg):
        nonlocal seen
        if event == unit:
            seen += 1
            if seen == step:
                if landed is not None:
                    landed.append(frame.f_code.co_name)
                raise exception
        return local

    def tracer(frame, event, arg):
        if frame.f_code in where:
            frame.f_trace_opcodes = unit == "opcode"
            return local
        return None

    return tracer


def run_interrupted(action, where, step, exception=KeyboardInterrupt, unit="opcode"):
    """Run ``action`` with an interruption at the ``step``-th opcode of the code objects ``where``: the function it
    landed in (None past the end), and whether ``action`` raised it."""
    landed = []
    sys.settrace(interrupting(where, step, exception, unit, landed))
    try:
        action()
    except exception:
        return landed[0] if landed else None, True
    finally:
        sys.settrace(None)
    return landed[0] if landed else None, False


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

        def hold(lock=lock):
            with lock:
                pass

        if run_interrupted(hold, functions_of(gpushim.locks), step)[0] is None:
            break
        assert can_be_taken_by_another_thread(lock), f"held after a Ctrl-C at opcode {step}"


@pytest.mark.parametrize("exception", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_an_interruption_while_gpushim_gates_loads_or_applies_reaches_the_importer(target, exception):
    """A signal handler's ``sys.exit(143)`` that lands while the target's import patches it ends the import."""
    where = set().union(*map(functions_of, [gpushim.engine, gpushim.gate, gpushim.catalogue]))
    for step in itertools.count(1):
        registry = registry_for(make_patch(target))
        registry.patch()
        sys.modules.pop(target.name, None)
        landed, raised = run_interrupted(target.import_, where, step, exception, unit="line")
        registry.unpatch()
        if landed is None:
            break
        assert raised, f"{exception.__name__} at line event {step}, in {landed}, was swallowed"


def test_a_ctrl_c_while_gpushims_finder_finds_a_target_leaves_later_imports_patched(target):
    """The finder keeps nothing per thread that a Ctrl-C half way through finding could leave behind."""
    registry = registry_for(make_patch(target))
    registry.patch()
    for step in itertools.count(1):
        sys.modules.pop(target.name, None)
        landed, _ = run_interrupted(target.import_, {ImportHooks.find_spec.__code__}, step)
        if landed is None:
            break
        sys.modules.pop(target.name, None)
        assert target.import_().compute(1) == 3, f"unpatched after a Ctrl-C at opcode {step}, in {landed}"
    registry.unpatch()
