"""What the CuPy patches' probes share: an elementwise kernel's own body, compiled and run on the host.

CuPy's elementwise code runs a kernel's body (``operation``, after its
``preamble``) once per element, with each parameter bound to that element's
value (a ``raw`` one to the whole array) and the outputs bound to
references.  A function with the same bindings, compiled by the host's C++
compiler, runs the same body on chosen values, on a machine without a device:
what it computes, and which elements of each ``raw`` array it reads (a
read outside the array is what faults on a device).  ``__device__`` is
defined away, and the types of a template kernel are chosen by the caller.
The body's arithmetic is C++'s on both: IEEE operations, ``fmod`` exact,
the other library functions within an ulp or two.
"""

from __future__ import annotations

import functools
import json
import math

HARNESS = """
#include <cmath>
#include <cstdio>
#include <vector>

#define __device__

struct Raw {
    std::vector<double> values;
    mutable std::vector<long long> reads;
    double operator[](long long i) const {
        reads.push_back(i);
        return i >= 0 && i < (long long)values.size() ? values[i] : NAN;
    }
};

static void print_reads(const char *name, const Raw &raw) {
    std::printf("\\"%s\\": [", name);
    for (size_t i = 0; i < raw.reads.size(); ++i) std::printf(i ? ", %lld" : "%lld", raw.reads[i]);
    std::printf("], ");
}

@TYPES@
@PREAMBLE@

static void body(@PARAMETERS@) {
@OPERATION@
}

int main() {
@CALLS@
    return 0;
}
"""


def _literal(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}LL"
    return "NAN" if math.isnan(value) else repr(float(value))


def _source(kernel, types, calls):
    raws = [p.name for p in kernel.in_params if p.raw]
    outputs = [p.name for p in kernel.out_params]
    parameters = [f"const Raw &{p.name}" if p.raw else f"const {p.ctype} {p.name}" for p in kernel.in_params]
    parameters += [f"{p.ctype} &{p.name}" for p in kernel.out_params]
    lines = []
    for call in calls:
        lines.append("    {")
        for name in raws:
            lines.append(f"        Raw {name}{{{{{', '.join(_literal(v) for v in call[name])}}}}};")
        lines += [f"        {p.ctype} {p.name} {{}};" for p in kernel.out_params]
        arguments = [p.name if p.raw else _literal(call[p.name]) for p in kernel.in_params] + outputs
        lines.append(f"        body({', '.join(arguments)});")
        lines.append('        std::printf("{");')
        lines += [f'        print_reads("{name}", {name});' for name in raws]
        lines += [f'        std::printf("\\"{name}\\": \\"%.17g\\", ", (double){name});' for name in outputs]
        lines.append('        std::printf("\\"done\\": true}\\n");')
        lines.append("    }")
    return (
        HARNESS.replace("@TYPES@", "".join(f"typedef {ctype} {name};\n" for name, ctype in types.items()))
        .replace("@PREAMBLE@", kernel.preamble)
        .replace("@PARAMETERS@", ", ".join(parameters))
        .replace("@OPERATION@", kernel.operation)
        .replace("@CALLS@", "\n".join(lines))
    )


def run_body(kernel, types, calls):
    """``kernel``'s body run on the host once per call: per call, each output (``%.17g``) and each raw array's reads.

    ``types`` names the C++ type of each template type (``{"T": "double"}``);
    each call gives every input its value, a raw one as a list.  Raises
    :class:`gpushim.ProbeCannotRun` where no ``c++`` is on PATH.
    """
    import shutil

    from gpushim import ProbeCannotRun

    compiler = shutil.which("c++")
    if compiler is None:
        raise ProbeCannotRun("no C++ compiler (c++) on PATH to compile the kernel's body on the host")
    printed = _compiled_and_run(compiler, _source(kernel, types, calls))
    return [{k: v for k, v in json.loads(line).items() if k != "done"} for line in printed.splitlines()]


@functools.lru_cache(maxsize=8)
def _compiled_and_run(compiler, source):
    """What the program ``source`` prints; the same source is compiled once (a test compiles a body many times)."""
    import subprocess
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder, "body")
        compile_ = [compiler, "-std=c++11", "-O0", "-x", "c++", "-", "-o", str(program)]
        subprocess.run(compile_, input=source, text=True, check=True, capture_output=True)
        return subprocess.run([str(program)], text=True, check=True, capture_output=True).stdout
