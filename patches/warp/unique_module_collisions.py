"""Kernels made by one ``module="unique"`` factory share a module: the second runs the first's code.

What breaks.  From 1.10.1, ``@wp.kernel(module="unique")`` names the kernel's
module after a hash of its content and, when a module of that name exists
already, hands back that module's kernel instead of the new one.  The name is
hashed before two things are known, so kernels that differ in them get one
name:

- a ``wp.static()`` expression that reads a loop variable
  (``wp.static(values[i])``) is evaluated only when the module is built, so a
  factory's kernels over ``[100, 200]`` and over ``[999, 888]`` both write
  ``[100, 200]``;
- a generic kernel (an ``Any`` argument) has no overloads yet, so a factory
  closing over different ``@wp.func`` callees makes kernels that all call the
  first factory's callee.

Nothing raises; the second kernel silently runs the first one's values or
code (MuJoCo-Warp builds its kernels this way).  1.10.0 made a new module per
kernel and had no such collision.

Fixed upstream.  NVIDIA/warp GH-1211, fixed by NVIDIA/warp@5eb19e96a (the
name hashes the module after resolving deferred ``wp.static()`` expressions)
and NVIDIA/warp@1ff6807ef (every loop iteration's value is hashed, not the
last one's), and GH-1231, fixed by NVIDIA/warp@6148820fd (a generic kernel
without overloads salts the name with its adjoint's hash, which covers the
functions it refers to); all in 1.12.0.  The reuse came with NVIDIA/warp@437095e85
(GH-995), in 1.10.1 and 1.11.0.

How the fix works.  ``warp.kernel`` (``warp._src.context.kernel``) is wrapped.
Any other ``module`` goes to the release untouched.  For ``"unique"`` the
wrapper makes the fresh module the release would make, ``Module(f.__name__,
None)``, and hands it to the release as an explicit module, which creates and
registers the kernel without naming or reusing anything; the wrapper then
names and reuses as 1.12.0 does: the module's hash from
``Module.get_module_hash()``, which builds the module once where it has
deferred ``wp.static()`` expressions; for a kernel with such expressions,
that hash salted with the module's generated CPU source, which holds every
iteration's value (where 1.12.0 hashes each value); for a generic kernel
without overloads, salted with the kernel's key and its adjoint's hash as in
1.12.0.  An existing module of the same name gives back its kernel (rebuilt
if a failed build marked it to be skipped), as in the release.  The module
names, and with them the kernel cache's directories, differ from unpatched
builds wherever the release collided, and for kernels with deferred
expressions; the code inside is the release's.

Not backported.  1ff6807ef's other half: an ordinary module's hash (the
kernel cache's key) still sees a deferred ``wp.static()`` expression's last
value only.  1.12.0's verbose-mode messages.

The probe.  One factory declares kernels over ``[100, 200]`` and ``[999,
888]`` with ``wp.static(values[i])``, and another generic kernels calling
two captured ``@wp.func``: each pair must be two kernels.  Nothing is built
or launched; the corpus of the tests launches them.  A release whose
``wp.kernel`` has no ``module`` (before 1.7) has no unique modules.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any  # the probe's generic kernel: its string annotations are read in this module

from gpushim import Patch, expect

patch = Patch(
    id="warp.unique_module_collisions",
    affected=">=1.10.1,<1.12.0",
    fixed_in="1.12.0",
    issue="NVIDIA/warp GH-1211, GH-1231",
    fix="NVIDIA/warp@5eb19e96a, @1ff6807ef, @6148820fd",
    summary='Kernels of one module="unique" factory share a module: the second runs the first one\'s values or code.',
)


def _unique(context):
    """Name a unique kernel's module by its content, and reuse the kernel of an existing module of that name."""

    def named(kernel):
        module = kernel.module
        digest = module.get_module_hash()
        if kernel.adj.has_unresolved_static_expressions:
            options = {**module.options, "output_arch": None}
            source = context.ModuleBuilder(module, options).codegen("cpu")
            digest = hashlib.sha256(digest + source.encode()).digest()
        if kernel.is_generic and not kernel.overloads:
            adjoint = context.ModuleHasher(module).hash_adjoint(kernel.adj)
            digest = hashlib.sha256(digest + kernel.key.encode() + adjoint).digest()
        kernel.is_unique_module = True
        module.name = f"{kernel.key}_{digest.hex()[:8]}"
        existing = context.user_modules.get(module.name)
        if existing is None:
            context.user_modules[module.name] = module
            return kernel
        reused = existing.kernels.get(kernel.key)
        if reused is None:
            raise RuntimeError(f"Internal error: unique module '{module.name}' has no kernel '{kernel.key}'")
        live = existing._get_live_kernels() if hasattr(existing, "_get_live_kernels") else existing.live_kernels
        for other in live:
            other.adj.skip_build = False
        return functools.update_wrapper(reused, kernel.func)

    def wrapper(wrapped, instance, args, kwargs):
        if kwargs.get("module") != "unique":
            return wrapped(*args, **kwargs)

        def decorate(f):
            return named(wrapped(f, **{**kwargs, "module": context.Module(f.__name__, None)}))

        f = args[0] if args else kwargs.pop("f", None)
        return decorate if f is None else decorate(f)

    return wrapper


@patch.applier
def _apply(warp, journal):
    import importlib

    context = importlib.import_module("warp._src.context")
    for name in ("Module", "ModuleBuilder", "ModuleHasher"):
        expect(context, name, type)
    expect(context, "Module.get_module_hash", callable)
    expect(context, "ModuleHasher.hash_adjoint", callable)
    expect(context, "user_modules", dict)
    journal.wrap((warp, context), "kernel", _unique(context))


@patch.prober
def _probe():
    """A unique factory's kernels over [100, 200] and [999, 888], and over two callees, are two kernels each."""
    import inspect

    import warp

    if "module" not in inspect.signature(warp.kernel).parameters:
        return None

    def deferred_static(values):
        @warp.kernel(module="unique", enable_backward=False)
        def unrolled(out: warp.array(dtype=int)):
            for i in range(warp.static(len(values))):
                out[i] = warp.static(values[i])

        return unrolled

    @warp.func
    def plus_one(x: float):
        return x + 1.0

    @warp.func
    def times_ten(x: float):
        return x * 10.0

    def generic_closure(f):
        @warp.kernel(module="unique")
        def generic_calling(out: warp.array(dtype=Any)):
            out[warp.tid()] = f(2.0)

        return generic_calling

    warp.config.quiet = True
    if deferred_static([100, 200]) is deferred_static([999, 888]):
        return "a unique factory's kernels over [100, 200] and [999, 888] with wp.static(values[i]) are one kernel"
    if generic_closure(plus_one) is generic_closure(times_ten):
        return "a unique factory's generic kernels calling two captured @wp.func are one kernel"
    return None
