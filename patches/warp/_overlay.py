"""Where an overlay (:mod:`gpushim.overlay`) enters the source Warp compiles at run time.

Warp builds each module from ``codegen.cpu_module_header`` (the CPU build,
clang inside ``warp-clang``) or ``cuda_module_header`` (the CUDA build,
NVRTC) and the module's generated code.  Both headers read ``#include
"builtin.h"``, which includes every ``native/*.h``; the generated code calls
the builtins as ``wp::<native_func>`` and their adjoints as
``wp::adj_<native_func>``.  An overlay enters through both doors at once:

- its corrected functions are inserted right after the include, under names
  of the patch's own, in namespace ``wp`` (before the header's ``float(x)``
  and ``int(x)`` macros);
- the builtin overloads it corrects are renamed to those names
  (``Function.native_func``), so generated code calls them, and nothing
  else does: the header's own functions, and what ``warp.so`` exports for
  calls from Python, stay the release's.

Up to 1.4 Warp prefixes the header to the source (``header + source``); from
1.5 it formats it first (``header.format(block_dim=...)``): :class:`Inserted`
answers both.  The headers themselves are not touched, so the precompiled
header Warp builds of them (NVRTC's ``-pch`` from 1.11, clang's from 1.13)
holds the release's headers, which is what it should hold; a ``before``
block, which changes what precedes the include, is refused on a release
that precompiles it.  The module hash covers the kernels' Python source
only: :func:`~gpushim.patches.warp._codegen.key_builds_apart` salts it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from gpushim import TargetMismatch, expect
from gpushim.overlay import Inserted, NativeFunction, Renamed
from gpushim.patches.warp._codegen import codegen_and_context, key_builds_apart

INCLUDE = '#include "builtin.h"\n'

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping


def native_header(warp, name: str) -> str:
    """The text of ``warp/native/<name>`` as the installed release ships it."""
    path = Path(expect(warp, "__file__", str)).parent / "native" / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise TargetMismatch(f"warp/native/{name} cannot be read ({error.strerror})") from None


def builtin_overloads(context, key: str, accept: Callable[[list[str]], bool]) -> list:
    """The overloads of builtin ``key`` whose input types pass ``accept``, by generic name (``vec_t``) or type name."""
    overloads = expect(context, "builtin_functions", dict).get(key)
    found = [
        function
        for function in getattr(overloads, "overloads", ())
        if accept(
            [
                getattr(kind, "_wp_generic_type_str_", getattr(kind, "__name__", ""))
                for kind in function.input_types.values()
            ]
        )
    ]
    if not found:
        raise TargetMismatch(f"Warp has no builtin {key} of the overloads the patch corrects")
    return found


def calling(*names: str) -> Callable[[object], bool]:
    """Whether a kernel's or function's syntax tree calls a builtin of ``names``: an overlay's ``changes``."""

    def calls(tree) -> bool:
        import ast

        return any(
            isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in names
            for node in ast.walk(tree)
        )

    return calls


def overlay(
    warp,
    journal,
    *,
    expects: Mapping[str, Iterable[NativeFunction]],
    code: str,
    renamed: Iterable[tuple[object, str]],
    salt: bytes,
    changes: Callable[[object], bool],
    before: str = "",
) -> None:
    """Compile ``code`` into every module after ``builtin.h``, and call it where generated code called the release's.

    ``expects`` names, by header, the release's functions the overlay
    replaces, each checked first; ``renamed`` pairs a builtin overload with
    the name of its corrected native function; ``salt`` and ``changes`` key
    the builds of the kernels it may change apart from the release's.
    ``before`` (a declaration the headers' templates must see) goes before
    the include.
    """
    codegen, context = codegen_and_context(warp)
    renamed = list(renamed)
    for name, functions in expects.items():
        source = native_header(warp, name)
        for function in functions:
            function.check(source, f"warp/native/{name}")
    if before and hasattr(expect(warp, "config"), "use_precompiled_headers"):
        raise TargetMismatch("this Warp precompiles builtin.h, which a declaration before it would not reach")
    for name in ("cpu_module_header", "cuda_module_header"):
        journal.replace(codegen, name, Inserted(expect(codegen, name, str), INCLUDE, before, code))
    for function, name in renamed:
        journal.replace(function, "native_func", Renamed(expect(function, "native_func", str), name))
    # The overlay's own text keys its builds too: a gpushim that changes it never gets an older build.
    text = "\n".join([before, code, *(name for _, name in renamed)]).encode()
    key_builds_apart(context, journal, salt + hashlib.sha256(text).digest(), changes)
