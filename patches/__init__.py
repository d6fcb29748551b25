"""gpushim's patches: one module per upstream bug, in one folder per library.

Each library folder's ``__init__`` names the module it patches (``TARGET``)
and the distributions that install it (``DISTRIBUTIONS``); each other module
in it defines ``patch``, a :class:`gpushim.Patch` that is the single source
of truth about that bug and its fix.  Nothing lists them: see
:mod:`gpushim.catalogue`.
"""
