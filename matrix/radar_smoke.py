"""The radar's smoke corpus: what a user of one library does first, run in one grid point's environment.

``matrix/radar.py`` runs it as ``python -I radar_smoke.py LIBRARY DISTRIBUTION [--gpushim]`` in the
point's virtual environment, once without gpushim and once with ``import gpushim.auto`` first.  Its last
line is ``RADAR {json}``: the releases installed and each check's outcome in order, ``"ok"`` or the
error's type and first line.  Checks after a failed import are not run.

Everything runs on the CPU, on every Python of the grid (3.8 on), and imports nothing of the project
but gpushim: CuPy cannot launch a kernel without a GPU, so its checks stop at what the host does
(dtypes and ufunc tables, ``cupy.testing``, the code ``cupy.fuse`` generates, traced on arrays whose
memory is never touched, and last ``cupy.testing``'s requirement checks, which a downstream suite runs
as it collects its tests).  Warp kernels here take no ``from __future__ import annotations``: Warp
reads their annotations as objects.
"""

import json
import sys
import traceback

MADE_UP_ADDRESS = 0x7F0000001000  # a device address nobody reads or writes


def cupy_checks():
    def imports():
        import cupy  # noqa: F401

    def dtypes():
        import cupy
        import numpy

        assert cupy.dtype("float16").itemsize == 2
        assert cupy.get_array_module(numpy.ones(1)) is numpy
        assert cupy.result_type(cupy.int8, cupy.float32) == numpy.float32
        assert "ff->f" in cupy.add.types and cupy.sin.nin == 1 and cupy.maximum.nout == 1

    def testing():
        import cupy.testing
        import numpy

        cupy.testing.assert_allclose(numpy.arange(3.0), numpy.arange(3.0))
        cupy.testing.assert_array_equal(numpy.ones((2, 2), numpy.int32), numpy.ones((2, 2), numpy.int32))

    def requires():
        import cupy.testing

        assert cupy.testing.installed("numpy>=1")

        @cupy.testing.with_requires("numpy>=1")
        def decorated():
            pass

    def fusion(*scalars):
        def check():
            code = _trace_fusion(lambda x, y: x * 2 + y, scalars or None)
            assert "cupy_multiply" in code and "cupy_add" in code, code

        return check

    return [
        ("import", imports),
        ("dtypes", dtypes),
        ("testing", testing),
        ("fuse", fusion()),
        ("fuse-scalar", fusion(1)),
        ("testing-requires", requires),
    ]


def _trace_fusion(func, scalars):
    """The operation ``cupy.fuse``'s first code generator writes for ``func`` on float32 arrays (or Python scalars)."""
    import cupy
    from cupy._core import _fusion_thread_local, fusion

    def allocate(size):
        memory = cupy.cuda.UnownedMemory(MADE_UP_ADDRESS, max(size, 1), None, device_id=0)
        return cupy.cuda.MemoryPointer(memory, 0)

    previous = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(allocate)
    local = _fusion_thread_local.thread_local
    try:
        x = cupy.empty((4,), cupy.float32)
        args = (x, scalars[0]) if scalars else (x, cupy.empty((4,), cupy.float32))
        local.history = history = fusion._FusionHistory()
        local.is_old_fusing = True
        kernel, _ = history.get_fusion(func, args, "radar")
    finally:
        local.history = None
        local.is_old_fusing = False
        cupy.cuda.set_allocator(previous)
    return kernel.operation


def dali_checks():
    def imports():
        import nvidia.dali  # noqa: F401

    def pipeline():
        import numpy
        from nvidia.dali import fn, pipeline_def, types

        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def scaled():
            data = fn.external_source(source=_batches, batch=True)
            return fn.cast(data * 2 + 1, dtype=types.INT32), data

        pipe = scaled()
        pipe.build()
        out, data = pipe.run()
        assert out.as_array().tolist() == [[1, 3, 5, 7], [3, 3, 3, 3]], out.as_array()
        assert numpy.array(data[1]).tolist() == [1.0] * 4

    def conditionals():
        from nvidia.dali import fn, pipeline_def

        @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
        def branching():
            data = fn.external_source(source=_batches, batch=True)
            if fn.reductions.sum(data) > 5:
                data = data * 10
            return data

        pipe = branching()
        pipe.build()
        (out,) = pipe.run()
        assert out.as_array().tolist() == [[0, 10, 20, 30], [1, 1, 1, 1]], out.as_array()

    return [("import", imports), ("pipeline", pipeline), ("conditionals", conditionals)]


def _batches():
    import numpy

    return [numpy.arange(4, dtype=numpy.float32), numpy.ones(4, numpy.float32)]


def warp_checks():
    def imports():
        import warp

        warp.config.quiet = True
        warp.init()

    def arrays():
        import numpy
        import warp

        assert warp.array([1, 2, 3], dtype=warp.int32, device="cpu").numpy().tolist() == [1, 2, 3]
        floats = warp.array(numpy.array([0.5, 1.5]), dtype=warp.float32, device="cpu")
        assert floats.numpy().tolist() == [0.5, 1.5]
        vectors = warp.array([(1.0, 2.0, 3.0)], dtype=warp.vec3, device="cpu")
        assert vectors.numpy().tolist() == [[1.0, 2.0, 3.0]]

    def sequence_values():
        import warp

        filled = warp.full(2, value=(1.0, 2.0, 3.0), device="cpu")
        assert filled.numpy().tolist() == [[1.0, 2.0, 3.0]] * 2, filled.numpy()
        filled.fill_([4.0, 5.0, 6.0])
        assert filled.numpy().tolist() == [[4.0, 5.0, 6.0]] * 2, filled.numpy()

    def kernel(offset):
        def check():
            import numpy
            import warp

            @warp.kernel
            def scale(
                values: warp.array(dtype=warp.float32),
                by: warp.float32,
                offset: warp.vec3,
                out: warp.array(dtype=warp.vec3),
            ):
                i = warp.tid()
                out[i] = offset + warp.vec3(values[i] * by)

            values = warp.array(numpy.arange(3, dtype=numpy.float32), device="cpu")
            out = warp.zeros(3, dtype=warp.vec3, device="cpu")
            warp.launch(scale, dim=3, inputs=[values, 2.0, offset(), out], device="cpu")
            assert out.numpy()[:, 0].tolist() == [1.0, 3.0, 5.0], out.numpy()

        return check

    return [
        ("import", imports),
        ("arrays", arrays),
        ("sequence-values", sequence_values),
        ("kernel", kernel(lambda: __import__("warp").vec3(1.0, 1.0, 1.0))),
        ("vector-argument", kernel(lambda: (1.0, 1.0, 1.0))),
    ]


def _version(distribution):
    try:
        from importlib import metadata
    except ImportError:
        return None
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _outcome(error):
    """The original error's type and first line of words (CuPy frames its ImportError in rules of ``=``)."""
    while error.__cause__ is not None:
        error = error.__cause__
    lines = [line.strip() for line in str(error).splitlines() if any(c.isalnum() for c in line)]
    return f"{type(error).__name__}: {lines[0] if lines else ''}".strip()[:200]


def main(library, distribution, with_gpushim):
    checks = {"cupy": cupy_checks, "dali": dali_checks, "warp": warp_checks}[library]()
    if with_gpushim:
        checks.insert(0, ("gpushim", lambda: __import__("gpushim.auto")))
    outcomes = {}
    for name, check in checks:
        try:
            check()
            outcomes[name] = "ok"
        except BaseException as error:  # noqa: B036 - a SystemExit in an import is a failed check too
            traceback.print_exc()
            outcomes[name] = _outcome(error)
            if name in ("gpushim", "import"):
                break
    names = (distribution, "numpy", "setuptools", "gast", "gpushim")
    versions = {name: _version(name) for name in names}
    versions["python"] = ".".join(map(str, sys.version_info[:3]))
    print("RADAR " + json.dumps({"versions": versions, "checks": outcomes}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--gpushim" in sys.argv[3:])
