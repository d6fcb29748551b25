"""``compute(x)`` returns ``x + 1`` before 2.0, where it was fixed to return ``x + 2``.

The fix adds the missing one to what the released ``compute`` returns; the
probe asks for ``compute(1)``.
"""

from gpushim import Patch

patch = Patch(
    id="exampletarget.compute_off_by_one",
    affected=">=1.0,<2.0",
    fixed_in="2.0",
    issue="example/target#1",
    fix="example/target#2",
    summary="compute(x) returns x + 1 instead of x + 2.",
)


def _add_one(wrapped, instance, args, kwargs):
    return wrapped(*args, **kwargs) + 1


@patch.applier
def _apply(module, journal):
    journal.wrap(module, "compute", _add_one)


@patch.prober
def _probe():
    import gpushim_example_target

    result = gpushim_example_target.compute(1)
    return None if result == 3 else f"compute(1) returned {result}, not 3"
