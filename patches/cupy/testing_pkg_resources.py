"""``cupy.testing.installed`` and ``with_requires`` need ``pkg_resources``, which setuptools 82 no longer ships.

What breaks.  ``cupy.testing._helper.installed(*specifiers)`` imports
``pkg_resources`` when it is called and asks ``pkg_resources.require`` about
each requirement; ``with_requires`` and ``numpy_satisfies`` call it.
setuptools 82.0.0 no longer ships ``pkg_resources`` (81.0.0 is the last
that does), and a plain virtual environment has no setuptools at all: there
``cupy.testing.installed("numpy")``, ``numpy_satisfies(">=1.20")`` and every
``@cupy.testing.with_requires(...)``, as a downstream test suite decorates
its tests at import, raise ``ModuleNotFoundError: No module named
'pkg_resources'``.  ``cupy.testing`` has asked ``pkg_resources`` since 5.0.0
(db186c31f; ``installed`` came in 11.0.0, 5e8a14c01), so CuPy 12.x and
13.x before 13.3.0 do this, with every NumPy.

Fixed upstream.  cupy/cupy#8480 (merged as c90310209, first in v14.0.0),
backported as #8496, released in 13.3.0: ``git tag --contains 6276fa00a``
(the merge of #8496) starts at v13.3.0.  13.3.0 reads each requirement with
``packaging`` and the installed version with :mod:`importlib.metadata`, and
``with_requires`` hands ``installed`` its requirements one by one (13.2.0
hands it the tuple, which ``pkg_resources.require`` accepted).  The declared
range starts where gpushim's CuPy range does, at 12.0.0; CuPy 12.x cannot
import without a CUDA driver, so the bug's presence there is read from git:
``installed`` and ``with_requires`` are the same in v12.0.0 and v13.2.0.

How the fix works.  Where ``pkg_resources`` cannot be found, once
``cupy.testing`` is imported, ``installed`` and ``with_requires`` (in
``cupy.testing`` and ``cupy.testing._helper``; ``numpy_satisfies`` and
``with_requires`` look ``installed`` up in their module at each call) get
13.3.0's behaviour: a requirement is met where a distribution of its name is
installed in a version its specifier contains, pre-releases included, and an
unversioned one by any version; markers and extras are not looked at, and
dependencies are not followed as ``pkg_resources.require`` followed them.
``with_requires`` makes the release's skip mark, ``_skipif`` of its module,
with the release's reason.  Where ``pkg_resources`` is found the release
works and the patch does not apply.  Before wrapping, the patch checks that
``installed`` still calls ``pkg_resources.require``.

Not backported.  13.3.0's type annotations and new tests, and its test
extra's new ``packaging`` requirement: gpushim requires ``packaging``.

The probe.  ``cupy.testing.installed("numpy")`` must be True and
``cupy.testing.with_requires("numpy")`` a mark that runs the test; nothing
touches a device.
"""

from __future__ import annotations

from gpushim import Patch, expect, expect_lines

patch = Patch(
    id="cupy.testing_pkg_resources",
    affected=">=12.0.0,<13.3.0",
    fixed_in="13.3.0",
    issue="cupy/cupy#8480",
    fix="cupy/cupy@c90310209 (backport #8496)",
    summary="cupy.testing.installed, with_requires, numpy_satisfies raise ModuleNotFoundError without pkg_resources.",
    module="cupy.testing",
    missing=("pkg_resources",),
)


def _met(specifier: str) -> bool:
    """Whether a distribution that meets requirement ``specifier`` is installed."""
    from importlib import metadata

    from packaging.requirements import Requirement

    requirement = Requirement(specifier)
    try:
        version = metadata.version(requirement.name)
    except metadata.PackageNotFoundError:
        return False
    return not requirement.specifier or requirement.specifier.contains(version, prereleases=True)


def _installed(wrapped, instance, args, kwargs):
    if kwargs:
        return wrapped(*args, **kwargs)  # the release's refusal of a keyword
    return all(_met(specifier) for specifier in args)


def _with_requires(helper):
    """The wrapper of ``with_requires``: the release's mark, decided by ``installed`` on each requirement."""

    def wrapper(wrapped, instance, args, kwargs):
        if kwargs:
            return wrapped(*args, **kwargs)
        return helper._skipif(not helper.installed(*args), reason=f"requires: {','.join(args)}")

    return wrapper


@patch.applier
def _apply(testing, journal):
    helper = expect(testing, "_helper")
    installed = expect(helper, "installed", callable)
    expect(helper, "_skipif", callable)
    expect_lines(installed, "pkg_resources.require(spec)")
    journal.wrap((testing, helper), "installed", _installed)
    journal.wrap((testing, helper), "with_requires", _with_requires(helper))


def _skipped(test) -> bool:
    """Whether ``with_requires`` marked ``test`` to be skipped: by pytest, or by unittest where pytest is missing."""
    marks = getattr(test, "pytestmark", [])
    return bool(getattr(test, "__unittest_skip__", False) or any(m.name == "skipif" and m.args[0] for m in marks))


@patch.prober
def _probe():
    """``cupy.testing.installed("numpy")`` is True and ``with_requires("numpy")`` lets its test run."""
    import cupy.testing

    try:
        found = cupy.testing.installed("numpy")
        skipped = _skipped(cupy.testing.with_requires("numpy")(lambda: None))
    except ImportError as error:
        return f"cupy.testing.installed('numpy') raises {type(error).__name__}: {error}"
    if found is not True or skipped:
        return f"cupy.testing.installed('numpy') gives {found!r}, and with_requires('numpy') skips: {skipped}"
    return None
