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
    """A module that reads as ``numpy``, holding ``names`` (a mapping) of its own."""
    import types

    class NumpyView(types.ModuleType):
        def __getattr__(self, name):
            return getattr(numpy, name)

    view = NumpyView(numpy.__name__, numpy.__doc__)
    for own in ("__package__", "__loader__", "__spec__"):
        del view.__dict__[own]  # read through to numpy's
    vars(view).update(names)
    view.__wrapped__ = numpy
    return view


def give_view(journal, modules, global_name, numpy, view):
    """Bind each module's global ``global_name``, which must be ``numpy`` itself, to ``view``."""
    for module in modules:
        found = expect(module, global_name, type(numpy), own=True)
        expect_same(found, numpy, f"{module.__name__}.{global_name}", "the numpy module")
    for module in modules:
        journal.replace(module, global_name, view)
