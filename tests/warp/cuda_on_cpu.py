"""CUDA text run one thread at a time on the CPU, in Warp's own CPU build: what a device returns to one thread.

A bug in a function's CUDA branch (``#if defined(__CUDA_ARCH__)``) shows on a
device only, but the branch is C++ that the CPU build compiles too, beside
sequential stand-ins for the device intrinsics it calls (``atomicCAS`` and
the bit casts), in a namespace of its own, ``wp::cuda_on_cpu``, where they
hide what the CPU headers call by those names.  One thread's result there is
a device's for one thread; what racing threads do it cannot show.
:func:`cuda_branch` reads a branch from a release's header, :func:`device_code`
takes an overlay's CUDA-only code into the namespace, and
:func:`compiled_for_the_cpu` puts code into every module the CPU build makes
while it is active.  Warp's module hash covers none of it: the caller keys its
module on the code (its kernel's native snippet).
"""

from __future__ import annotations

import contextlib
import re

from gpushim.overlay import Inserted
from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp._overlay import INCLUDE

NAMESPACE = "cuda_on_cpu"

_STAND_INS = """
// one thread, no other: a compare-and-swap always sees what the thread itself left
inline int atomicCAS(int* address, int compare, int value)
{
    const int old = *address;
    if (old == compare)
        *address = value;
    return old;
}
inline unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare, unsigned long long value)
{
    const unsigned long long old = *address;
    if (old == compare)
        *address = value;
    return old;
}
template <typename To, typename From> inline To gpushim_bit_cast(From from)
{
    union { From from; To to; } cast = {from};
    return cast.to;
}
inline float __int_as_float(int bits) { return gpushim_bit_cast<float>(bits); }
inline int __float_as_int(float value) { return gpushim_bit_cast<int>(value); }
inline double __longlong_as_double(long long bits) { return gpushim_bit_cast<double>(bits); }
inline long long __double_as_longlong(double value) { return gpushim_bit_cast<long long>(value); }
"""


def cuda_branch(header: str, declaration: str) -> str:
    """The text between ``#if defined(__CUDA_ARCH__)`` and ``#else`` in the body of ``declaration`` in ``header``."""
    found = re.search(r"\s*".join(re.escape(token) for token in declaration.split()) + r"\s*\{", header)
    assert found, f"no {declaration}"
    depth = 0
    for end in range(found.end() - 1, len(header)):
        depth += {"{": 1, "}": -1}.get(header[end], 0)
        if depth == 0:
            break
    body = header[found.end() : end]
    return body.partition("#if defined(__CUDA_ARCH__)")[2].partition("#else")[0]


def device_code(overlay: str) -> str:
    """An overlay's code for the CUDA build (``namespace wp``, under ``#if`` with its ``#define``s), for the namespace:
    its preprocessor lines left out and its namespace's body alone."""
    lines = [line for line in overlay.splitlines() if not line.startswith("#")]
    assert lines[:2] == ["namespace wp", "{"] and lines[-1] == "}", "an overlay that is not one namespace wp"
    return "\n".join(lines[2:-1]) + "\n"


def harness(*functions: str) -> str:
    """``functions`` in ``wp::cuda_on_cpu``, after the stand-ins."""
    return f"namespace wp\n{{\nnamespace {NAMESPACE}\n{{\n{_STAND_INS}{''.join(functions)}}}\n}}\n"


@contextlib.contextmanager
def compiled_for_the_cpu(warp, code: str):
    """``code`` after ``#include "builtin.h"`` in every module the CPU build makes inside the block."""
    codegen = codegen_and_context(warp)[0]
    header = codegen.cpu_module_header
    codegen.cpu_module_header = Inserted(header, INCLUDE, "", code)
    try:
        yield
    finally:
        codegen.cpu_module_header = header
