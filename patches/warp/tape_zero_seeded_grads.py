"""``Tape.zero()`` leaves the gradients seeded through ``tape.backward(grads=...)`` (Warp 1.x up to 1.5.1).

What breaks.  ``Tape.backward(grads={y: seed})`` copies each seed into
``y.grad`` and adds ``y`` to the tape's ``const_gradients``, a set that
``Tape.zero()`` skips.  The seeded gradient therefore survives
``tape.zero()``: computing a Jacobian row by row, the documented way,
seeds ``y`` for one row, zeroes, then seeds ``z`` for the next, and the
leftover seed of ``y`` flows back a second time.  ``y = x; z = y`` gives
``x.grad`` 1, then 2 where 1 is right; nothing raises.  ``const_gradients``
is as old as the Tape (0.3.1), so every 1.x release before 1.6.0 has it.

Fixed upstream.  NVIDIA/warp#407, fixed by NVIDIA/warp@847da05fe (merged as
59c36ba1a; ``git tag --contains``: v1.6.0 first), which removes
``const_gradients``: ``Tape.zero()`` zeroes every gradient on the tape.
Run on 1.3.1 and 1.5.1 (the seed survives) and 1.6.0 (it does not).

How the fix works.  ``Tape.zero`` is wrapped so that, during the call, the
tape's ``const_gradients`` is an empty set: Warp's own loop then zeroes every
gradient it holds, structs included, as 1.6.0's does.  The set is put back
after the call, for code that reads it; ``Tape.zero`` is its only reader in
Warp.  A tape without the attribute (or with something else in it) is
zeroed as released.

Not backported.  1.6.0 no longer creates or fills ``const_gradients``; the
patched release still does, and only ``zero()`` ignores it.

The probe.  A tape that holds ``x``'s gradient, as a launch reading ``x``
leaves it, ``backward(grads={x: ones})``, then ``zero()``: ``x.grad`` must
be 0.  No kernel is compiled.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="warp.tape_zero_seeded_grads",
    affected="<1.6.0",
    fixed_in="1.6.0",
    issue="NVIDIA/warp#407",
    fix="NVIDIA/warp@847da05fe",
    summary="Tape.zero() leaves the gradients seeded through tape.backward(grads=...), so they flow back again.",
)

_ZERO = Parameters()  # after self


def _zero(wrapped, instance, args, kwargs):
    seeded = vars(instance).get("const_gradients")
    if not isinstance(seeded, set):
        return wrapped(*args, **kwargs)
    instance.const_gradients = set()
    try:
        return wrapped(*args, **kwargs)
    finally:
        instance.const_gradients = seeded


@patch.applier
def _apply(warp, journal):
    tape = expect(warp, "Tape", type)
    _ZERO.check(expect(tape, "zero", callable, own=True), method=True)
    journal.wrap(tape, "zero", _zero)


@patch.prober
def _probe():
    import warp

    warp.config.quiet = True
    warp.init()
    x = warp.zeros(2, dtype=warp.float32, device="cpu", requires_grad=True)
    tape = warp.Tape()
    tape.get_adjoint(x)  # as a launch of the tape that reads x records it
    tape.backward(grads={x: warp.ones(2, dtype=warp.float32, device="cpu")})
    tape.zero()
    left = x.grad.numpy().tolist()
    if left != [0.0, 0.0]:
        return f"tape.zero() after backward(grads={{x: ones}}) leaves x.grad at {left}, not [0.0, 0.0]"
    return None
