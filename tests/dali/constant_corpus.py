"""DALI constant nodes made from Python and NumPy values, out of a pipeline on the CPU or a device.

Each case builds one pipeline (``device_id=None`` on the CPU) of batch size
2 whose output is a constant made one way or another from one value, runs
it once and records each sample's dtype, shape and values, or the exception
the pipeline's definition or build raises (type and first line).
"""

from __future__ import annotations

VALUES = {
    "3.0": 3.0,
    "3": 3,
    "True": True,
    "[3.0]": [3.0],
    "(1, 2)": (1, 2),
    "[]": [],
    "float32(3)": "numpy.float32(3.0)",
    "array(3.0)": "numpy.array(3.0)",
    "array([1, 2])": "numpy.array([1.0, 2.0])",
    "'x'": "x",
}


def _value(name):
    import numpy

    value = VALUES[name]
    return eval(value, {"numpy": numpy}) if isinstance(value, str) and value.startswith("numpy.") else value


def _makers(device):
    from nvidia.dali import fn, types

    return {
        "Constant(device)": lambda value: types.Constant(value, device=device),
        "Constant(dtype=INT32, device)": lambda value: types.Constant(value, dtype=types.INT32, device=device),
        "Constant(shape=(2,), device)": lambda value: types.Constant(value, shape=(2,), device=device),
        "Constant(layout='')": lambda value: types.Constant(value, layout=""),
        "fn.cast(value)": lambda value: fn.cast(value, dtype=types.FLOAT, device=device),
        "Constant(device) * 2": lambda value: types.Constant(value, device=device) * 2,
    }


def cases():
    """Every maker over every value; but ``fn.cast`` of a string, refused in words that changed after 1.26.0."""
    return {
        f"{maker} of {value}": (maker, value)
        for maker in _makers("cpu")
        for value in VALUES
        if (maker, value) != ("fn.cast(value)", "'x'")
    }


def _samples(batch):
    import numpy as np

    if hasattr(batch, "as_cpu"):
        batch = batch.as_cpu()
    samples = [np.array(batch[i]) for i in range(len(batch))]
    return [{"dtype": str(s.dtype), "shape": list(s.shape), "values": s.ravel().tolist()} for s in samples]


def _pipeline(make, value, device_id):
    """A pipeline of batch size 2 whose one output is ``make(value)``."""
    from nvidia.dali import pipeline_def

    @pipeline_def(batch_size=2, num_threads=1, device_id=device_id)
    def constant():
        return make(value)

    return constant()


def run(device="cpu", device_id=None):
    """``{case: outcome}`` for every case, with constants on ``device``."""
    makers = _makers(device)
    outcomes = {}
    for case, (maker, value) in cases().items():
        try:
            pipeline = _pipeline(makers[maker], _value(value), device_id)
            pipeline.build()
            (batch,) = pipeline.run()
        except Exception as error:
            outcomes[case] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        else:
            outcomes[case] = _samples(batch)
    return outcomes
