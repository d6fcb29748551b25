"""``cupy.random.seed(42)`` and ``RandomState(42)`` raise TypeError under NumPy 2.

What breaks.  ``RandomState.seed`` turns any seed that is neither ``None`` nor
a NumPy array into an integer with
``int(numpy.asarray(seed).astype(numpy.uint64, casting='safe'))``.  That relied
on NumPy 1's value-based casting of 0-d arrays; under NumPy 2 (NEP 50) the
cast from ``int64`` to ``uint64`` is never "safe", so every ordinary integer
seed raises ``TypeError: Cannot cast scalar from dtype('int64') to
dtype('uint64') according to the rule 'safe'``.  ``cupy.random.seed(s)`` calls
``get_random_state().seed(s)`` and ``RandomState(s)`` calls ``self.seed(s)``,
so both fail; the ``CUPY_SEED`` variable does not, because
``get_random_state`` passes it on as ``numpy.uint64(int(value))``, which the
safe cast accepts.  CuPy 13.0.0 to 13.2.0 do this with NumPy >= 2 (13.0 and
13.1 require NumPy < 1.29 and import under NumPy 2 only with
``cupy.numpy2_removed_names``); with NumPy 1 the release works.

Fixed upstream.  cupy/cupy#8392 (duplicate #8648), fixed by cupy/cupy#8429,
backported to v13 by #8439, released in 13.3.0.  13.3.0 checks the seed
itself: ``numpy.asarray(seed)`` must have an integer or bool dtype (else
``TypeError('Seed must be an integer.')``), its ``int()`` must lie in ``[0,
2**64)`` (else ``ValueError('Seed must be an integer between 0 and 2**64 -
1')``), and that ``int`` is the seed.

How the fix works.  ``RandomState.seed`` gets a wrapper.  A call without a
seed, with ``None`` or with a NumPy array goes to the release's method
untouched (13.3.0 changed neither branch), as does a call whose arguments do
not bind, so that the release reports it.  Otherwise the wrapper imports
cuRAND as the method does first (a missing libcurand fails as on 13.3.0),
runs 13.3.0's check and hands the method the checked integer as a
``numpy.uint64``, which its safe cast accepts and turns back into the same
``int``: cuRAND and ``_rk_seed`` get what 13.3.0 gives them.

Not backported.  13.3.0's other changes.

The probe.  A ``RandomState`` made with ``__new__`` is seeded while
``cupy_backends.cuda.libs.curand`` is a stand-in that only records, so it
needs neither a GPU nor libcurand and touches no device on a GPU host.
CuPy 12 binds cuRAND in ``cupy.random._generator`` when that module is
imported, not in each method as 13.0.0 does: the stand-in takes that name's
place too, or 12.x's ``seed`` would hand the made-up generator to the real
cuRAND, which dies of it.
"""

from __future__ import annotations

import contextlib

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="cupy.random_seed_numpy2",
    affected=">=13.0.0,<13.3.0",
    fixed_in="13.3.0",
    issue="cupy/cupy#8392",
    fix="cupy/cupy#8429 (backport #8439)",
    summary="cupy.random.seed and RandomState(seed) raise TypeError on integer seeds under NumPy 2.",
    only_with={"numpy": ">=2"},
)


_SEED = Parameters(seed=None)  # RandomState.seed's, after self


@patch.applier
def _apply(cupy, journal):
    import importlib
    import types

    import numpy

    generator = importlib.import_module("cupy.random._generator")
    state = expect(generator, "RandomState", type)
    _SEED.check(expect(state, "seed", types.FunctionType, own=True), method=True)

    def checked(seed):
        array = numpy.asarray(seed)
        if array.dtype.kind not in "biu":
            raise TypeError("Seed must be an integer.")
        seed = int(array)
        if seed < 0 or seed >= 2**64:
            raise ValueError("Seed must be an integer between 0 and 2**64 - 1")
        return numpy.uint64(seed)

    def wrapper(wrapped, instance, args, kwargs):
        try:
            (seed,) = _SEED.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)
        if seed is None or isinstance(seed, numpy.ndarray):
            return wrapped(*args, **kwargs)
        from cupy_backends.cuda.libs import curand  # noqa: F401

        return wrapped(checked(seed))

    journal.wrap(state, "seed", wrapper)


class RecordingCurand:
    """A stand-in for ``cupy_backends.cuda.libs.curand`` that records calls and touches nothing.

    Its constants are cuRAND's own ``curandRngType`` values.
    """

    CURAND_RNG_PSEUDO_DEFAULT = 100
    CURAND_RNG_PSEUDO_XORWOW = 101
    CURAND_RNG_PSEUDO_MRG32K3A = 121
    CURAND_RNG_PSEUDO_MTGP32 = 141
    CURAND_RNG_PSEUDO_MT19937 = 142
    CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)

        def record(*args):
            self.calls.append((name, *args))
            return 1 if name == "createGenerator" else None

        return record


@contextlib.contextmanager
def installed_curand(curand):
    """Give ``curand`` where the release looks cuRAND up, inside a ``with`` block.

    That is ``cupy_backends.cuda.libs.curand``, and in 12.x also the name ``_generator`` binds at import.
    """
    import importlib
    import sys

    libs = importlib.import_module("cupy_backends.cuda.libs")
    generator = importlib.import_module("cupy.random._generator")
    name, missing = "cupy_backends.cuda.libs.curand", object()
    tables = [(sys.modules, name), (vars(libs), "curand")]
    tables += [(vars(generator), "curand")] if "curand" in vars(generator) else []
    saved = [(table, key, table.get(key, missing)) for table, key in tables]
    for table, key in tables:
        table[key] = curand
    try:
        yield curand
    finally:
        for table, key, value in saved:
            if value is missing:
                table.pop(key, None)
            else:
                table[key] = value


@patch.prober
def _probe():
    """``RandomState.seed(42)``, the seed of cupy/cupy#8392, with a recording cuRAND."""
    import threading

    from cupy.random import _generator

    with installed_curand(RecordingCurand()):
        state = _generator.RandomState.__new__(_generator.RandomState)
        state._generator, state.method = 1, RecordingCurand.CURAND_RNG_PSEUDO_DEFAULT
        state._lock = threading.Lock()  # 14.0 serialises seed() with it
        try:
            state.seed(42)
            found = None
        except TypeError as error:
            found = f"RandomState.seed(42) raises TypeError: {error}"
        del state  # its __del__ imports cuRAND: let it find the stand-in
    return found
