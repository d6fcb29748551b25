"""Kernels made by one ``module="unique"`` factory share a module: the second runs the first's code.

What breaks.  ``@wp.kernel(module="unique")`` names the kernel's module
after a hash of its content.  The name is hashed before two things are
known, so kernels that differ in them get one name:

- a ``wp.static()`` expression that reads a loop variable
  (``wp.static(values[i])``) is evaluated only when the module is built, so a
  factory's kernels over ``[100, 200]`` and over ``[999, 888]`` are named
  alike;
- a generic kernel (an ``Any`` argument) has no overloads yet, so a factory
  closing over different ``@wp.func`` callees makes kernels named alike.

From 1.10.1, a module of a name that exists already hands back its kernel
instead of the new one: the second kernel silently runs the first one's
values (the factory over ``[999, 888]`` writes ``[100, 200]``) or callee,
where its arguments have the first one's types.  Where they do not
(upstream's GH-1231 case: callees that take two struct types), launching
the second raises ``WarpCodegenError``, the first one's callee refusing the
second struct.  1.10.0 reuses nothing but builds each kernel into a module
of that one name: a kernel whose module hashes as the first one's (the
deferred values' last iteration is all the hash sees) is served the first
one's build and silently writes its values; the others raise
``RuntimeError: Failed to find forward kernel`` at launch.  MuJoCo-Warp
builds its kernels this way.

Fixed upstream.  NVIDIA/warp GH-1211, fixed by NVIDIA/warp@5eb19e96a (the
name hashes the module after resolving deferred ``wp.static()`` expressions)
and NVIDIA/warp@1ff6807ef (every loop iteration's value is hashed, not the
last one's), and GH-1231, fixed by NVIDIA/warp@6148820fd (a generic kernel
without overloads salts the name with its adjoint's hash, which covers the
functions it refers to); all in 1.12.0 (``git tag --contains``: v1.12.0 first, for all three).
``module="unique"`` came with NVIDIA/warp@2eda9e8e4 (v1.7.0 first), naming
the module by the hash from the start; the reuse came with GH-995:
NVIDIA/warp@437095e85 in 1.11.0, backported to 1.10.1 as
NVIDIA/warp@bec69589f.  Run: 1.7.0, 1.9.1, 1.10.0, 1.10.1 and 1.11.1 have
the bug, 1.12.0 not.

How the fix works.  ``warp.kernel`` (``warp._src.context.kernel``) is wrapped.
Any other ``module`` goes to the release untouched.  For ``"unique"`` the
wrapper makes the fresh module the release would make, ``Module(f.__name__,
None)``, and hands it to the release as an explicit module, which creates and
registers the kernel without naming or reusing anything; the wrapper then
names and reuses as 1.12.0 does.  The name hashes the module as
``Module.get_module_hash()`` does, which builds the module once where it has
deferred ``wp.static()`` expressions; every value those take in that build
(each loop iteration's) is hashed too, as 1.12.0 hashes them: a function by
its content, anything else by its bytes.  To hear them,
``Adjoint.evaluate_static_expression`` is wrapped as well; it passes every
evaluation on unchanged, and notes its code and value only inside that
build, on the thread that asked for it.  A generic kernel without overloads
salts the name with its key and its adjoint's hash, as in 1.12.0.  An
existing module of the same name gives back its kernel (rebuilt if a failed
build marked it to be skipped), as in the release.  The module names, and
with them the kernel cache's directories, differ from unpatched builds
wherever the release collided and for kernels with deferred expressions;
the code inside is the release's.

Not backported.  Releases 1.7.0 to 1.9.x, which have the bug as 1.10.0 has
it (1.7.0's kernels over ``[100, 200]``, ``[999, 200]`` and ``[999, 888]``
all write ``[100, 200]``): their code lives in ``warp.context`` and
``warp.codegen``, not in the ``warp._src`` that the patch reads and
wraps, and status says ``not-backported`` there.  1ff6807ef's other half: an ordinary module's hash (the
kernel cache's key) still sees a deferred ``wp.static()`` expression's last
value only.  1.12.0's verbose-mode messages.

The probe.  One factory declares kernels over ``[100, 200]`` and ``[999,
888]`` with ``wp.static(values[i])``, and another generic kernels calling
two captured ``@wp.func``: each pair must be two modules of two names.  Nothing is built
or launched; the corpus of the tests launches them.  A release whose
``wp.kernel`` has no ``module`` (before 1.7) has no unique modules.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from typing import Any  # the probe's generic kernel: its string annotations are read in this module

from gpushim import Patch, expect

patch = Patch(
    id="warp.unique_module_collisions",
    affected=">=1.10.0,<1.12.0",
    fixed_in="1.12.0",
    issue="NVIDIA/warp GH-1211, GH-1231",
    fix="NVIDIA/warp@5eb19e96a, @1ff6807ef, @6148820fd",
    not_backported={">=1.7.0,<1.10.0": "the patch reads and wraps warp._src, which Warp has from 1.10.0"},
    summary='Kernels of one module="unique" factory share a module: the second runs the first one\'s values or code.',
)


_HEARD = threading.local()  # .values: the (code, value) of each evaluation, while a unique kernel's build listens


def _evaluate_static_expression(wrapped, instance, args, kwargs):
    value, code = wrapped(*args, **kwargs)
    heard = getattr(_HEARD, "values", None)
    if heard is not None:
        heard.append((code, value))
    return value, code


def _content_hash(context, kernel):
    """The hash a unique kernel's module is named by: 1.12.0's, whatever the release hashes."""
    module = kernel.module
    _HEARD.values = []
    try:
        digest = hashlib.sha256(module.get_module_hash())
    finally:
        deferred = _HEARD.__dict__.pop("values")
    hasher = context.ModuleHasher(module)
    for code, value in deferred:
        digest.update(code.encode())
        digest.update(
            hasher.hash_function(value) if isinstance(value, context.Function) else hasher.get_constant_bytes(value)
        )
    if kernel.is_generic and not kernel.overloads:
        digest.update(kernel.key.encode())
        digest.update(hasher.hash_adjoint(kernel.adj))
    return digest.hexdigest()


def _unique(context):
    """Name a unique kernel's module by its content, and reuse the kernel of an existing module of that name."""

    def named(kernel):
        module = kernel.module
        kernel.is_unique_module = True
        module.name = f"{kernel.key}_{_content_hash(context, kernel)[:8]}"
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
    codegen = importlib.import_module("warp._src.codegen")
    for name in ("Module", "ModuleHasher", "Function"):
        expect(context, name, type)
    for name in ("Module.get_module_hash", "ModuleHasher.hash_adjoint", "ModuleHasher.hash_function"):
        expect(context, name, callable)
    expect(context, "ModuleHasher.get_constant_bytes", callable)
    expect(context, "user_modules", dict)
    expect(codegen, "Adjoint.evaluate_static_expression", callable)
    journal.wrap(codegen.Adjoint, "evaluate_static_expression", _evaluate_static_expression)
    journal.wrap((warp, context), "kernel", _unique(context))


@patch.prober
def _probe():
    """A unique factory's kernels over [100, 200] and [999, 888], and over two callees, are two modules each."""
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

    def one_name(first, second):
        return first.module.name == second.module.name  # one kernel from 1.10.1, two modules of one name in 1.10.0

    warp.config.quiet = True
    if one_name(deferred_static([100, 200]), deferred_static([999, 888])):
        return "a unique factory's kernels over [100, 200] and [999, 888] with wp.static(values[i]) share a module name"
    if one_name(generic_closure(plus_one), generic_closure(times_ten)):
        return "a unique factory's generic kernels calling two captured @wp.func share a module name"
    return None
