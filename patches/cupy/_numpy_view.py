"""What the CuPy patches share that correct a name CuPy's code reads on NumPy: a view of NumPy for its modules.

CuPy's modules read NumPy's attributes when they run (``numpy.AxisError``,
``np.compat.integer_types``, ``numpy.equal``), through their global
``numpy`` or ``np``.  Where NumPy lost such a name, or where what CuPy
reads there must answer otherwise, a patch binds that global, in the modules
that read it, to a view: a module that holds the patch's names and forwards
every other attribute to NumPy itself, so that nothing outside those
modules sees a change.  A Cython module looks its globals up in its
dictionary at each use (its cache of them is keyed on the dictionary's
version), and the attribute on them at each use, so the view is what its
reads find too.
"""

from __future__ import annotations

from gpushim import expect, expect_same


def numpy_view(numpy, names):
    """A module that reads as ``numpy``, holding ``names`` (a mapping) of its own.

    It is a plain module holding NumPy's attributes as they are when it is
    made, then ``names``; a name NumPy gains later (a submodule imported
    since) it reads on NumPy, through the module's ``__getattr__`` (PEP
    562), as it does ``__spec__`` and ``__file__``.  A plain module, and not
    a subclass forwarding every read, because CuPy reads NumPy in its
    hottest paths (``numpy.add`` for ``a + b``): a read from the view costs
    what one from NumPy does, where a forwarding subclass costs some
    microseconds, an AttributeError raised and caught each time.  The price:
    an attribute of NumPy rebound after the view is made is not seen by the
    modules given the view.
    """
    import types

    view = types.ModuleType(numpy.__name__, numpy.__doc__)
    for own in ("__package__", "__loader__", "__spec__"):
        del view.__dict__[own]  # read through to numpy's
    vars(view).update((name, value) for name, value in vars(numpy).items() if not name.startswith("__"))
    vars(view).update(names)
    view.__getattr__ = lambda name: getattr(numpy, name)
    view.__wrapped__ = numpy
    return view


def give_view(journal, modules, global_name, numpy, view):
    """Bind each module's global ``global_name``, which must be ``numpy`` itself, to ``view``."""
    for module in modules:
        found = expect(module, global_name, type(numpy), own=True)
        expect_same(found, numpy, f"{module.__name__}.{global_name}", "the numpy module")
    for module in modules:
        journal.replace(module, global_name, view)
