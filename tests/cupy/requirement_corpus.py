"""``cupy.testing.installed``, ``numpy_satisfies`` and ``with_requires`` over requirements met, unmet and malformed.

Each case calls one of the three as a test suite calls it and records the
answer (for ``with_requires``, the skip mark's condition and reason) or the
error.  Nothing touches a device.  The cell's NumPy is 1.26 or 2.2 and its
CuPy is installed as ``cupy-cuda12x``; no distribution is named
``gpushim-nowhere``.
"""

from __future__ import annotations

# name: (function, positional arguments, keyword arguments)
CASES = {
    "installed numpy": ("installed", ("numpy",), {}),
    "installed NumPy, another spelling": ("installed", ("NumPy",), {}),
    "installed numpy>=1": ("installed", ("numpy>=1",), {}),
    "installed numpy<1": ("installed", ("numpy<1",), {}),
    "installed numpy>=1,<99": ("installed", ("numpy>=1,<99",), {}),
    "installed numpy==1.*": ("installed", ("numpy==1.*",), {}),
    "installed numpy>=99.0.0rc1": ("installed", ("numpy>=99.0.0rc1",), {}),
    "installed numpy with an extra": ("installed", ("numpy[dev]>=1",), {}),
    "installed numpy with a marker": ("installed", ('numpy>=1; python_version < "3"',), {}),
    "installed cupy_cuda12x>=12": ("installed", ("cupy_cuda12x>=12",), {}),
    "installed cupy (another distribution)": ("installed", ("cupy",), {}),
    "installed nothing": ("installed", (), {}),
    "installed a missing distribution": ("installed", ("gpushim-nowhere",), {}),
    "installed numpy and a missing distribution": ("installed", ("numpy", "gpushim-nowhere"), {}),
    "installed a missing distribution and a malformed one": ("installed", ("gpushim-nowhere", "numpy >>= 1"), {}),
    "installed a malformed requirement": ("installed", ("numpy >>= 1",), {}),
    "installed a tuple": ("installed", (("numpy",),), {}),
    "installed a keyword": ("installed", (), {"spec": "numpy"}),
    "numpy_satisfies >=1": ("numpy_satisfies", (">=1",), {}),
    "numpy_satisfies <1": ("numpy_satisfies", ("<1",), {}),
    "numpy_satisfies a malformed range": ("numpy_satisfies", ("=>1",), {}),
    "with_requires numpy": ("with_requires", ("numpy",), {}),
    "with_requires numpy>=1 and a missing distribution": ("with_requires", ("numpy>=1", "gpushim-nowhere"), {}),
    "with_requires numpy<1": ("with_requires", ("numpy<1",), {}),
    "with_requires nothing": ("with_requires", (), {}),
    "with_requires a malformed requirement": ("with_requires", ("numpy >>= 1",), {}),
}


def run(selected=None):
    """``{case id: outcome}`` for the corpus, or the cases named in ``selected``."""
    import cupy.testing

    outcomes = {}
    for case in CASES if selected is None else selected:
        function, args, kwargs = CASES[case]
        try:
            answer = getattr(cupy.testing, function)(*args, **kwargs)
        except Exception as error:
            outcomes[case] = f"{type(error).__name__}: {error}"
        else:
            outcomes[case] = _described(answer)
    return outcomes


def _described(answer):
    mark = getattr(answer, "mark", None)
    if mark is None:
        return answer
    return {"mark": mark.name, "skips": bool(mark.args[0]), "reason": mark.kwargs["reason"]}
