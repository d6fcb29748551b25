"""DALI CPU pipelines fed from ``fn.external_source``, for the patches of an environment that moved on.

Their outputs must not depend on how DALI was made to import: the patched
release in the new environment must give what the same release gives in the
environment it was built for.  Each case builds one pipeline on the CPU
(``device_id=None``) over two samples of one dtype, runs it once and records
every output sample as its dtype, shape and values.  The conditionals go
through DALI's vendored autograph, whose ``gast_util`` the drift patches
prepare; the other operators cover the rest of an ordinary pipeline.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

DTYPES = ["uint8", "int16", "int32", "int64", "float32"]


def samples(dtype: str) -> list:
    import numpy as np

    first = np.arange(12).reshape(3, 4) % 7
    return [first.astype(dtype), (first[::-1, ::-1] * 2 + 1).astype(dtype)]


def _operators() -> dict:
    from nvidia.dali import fn, types

    return {
        "identity": lambda data: data,
        "arithmetic": lambda data: data * 2 + 3,
        "cast to float": lambda data: fn.cast(data, dtype=types.FLOAT),
        "sum over rows": lambda data: fn.reductions.sum(data, axes=0),
        "max": lambda data: fn.reductions.max(data),
        "transpose": lambda data: fn.transpose(data, perm=[1, 0]),
        "slice": lambda data: fn.slice(data, [1, 1], [2, 2], axes=[0, 1]),
        "pad": lambda data: fn.pad(data, axes=[1], shape=[6], fill_value=5),
        "reshape": lambda data: fn.reshape(data, shape=[2, 6]),
        "stack": lambda data: fn.stack(data, data),
        "cat": lambda data: fn.cat(data, data, axis=1),
        "comparison": lambda data: data > 3,
    }


def _conditional(data, threshold):
    from nvidia.dali import fn

    if fn.reductions.max(data) > threshold:
        result = data + 1
    else:
        result = data * 0
    return result


CONDITIONALS = {"conditional, both branches": 8, "conditional, one branch": 100}


def run_case(operator: str, dtype: str) -> object:
    import numpy as np
    from nvidia.dali import fn, pipeline_def

    conditional = operator in CONDITIONALS

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=conditional)
    def pipeline():
        data = fn.external_source(source=lambda: samples(dtype), batch=True)
        if conditional:
            return _conditional(data, CONDITIONALS[operator])
        return _operators()[operator](data)

    pipe = pipeline()
    pipe.build()
    (outputs,) = pipe.run()
    arrays = [np.asarray(sample) for sample in outputs]
    return [{"dtype": str(array.dtype), "shape": list(array.shape), "values": array.tolist()} for array in arrays]


def case_names() -> list[tuple[str, str]]:
    operators = list(CONDITIONALS) + [name for name in _operators()]
    return [(operator, dtype) for operator in operators for dtype in DTYPES]


def run_corpus() -> dict:
    outcomes = {}
    for operator, dtype in case_names():
        try:
            outcomes[f"{operator}, {dtype}"] = run_case(operator, dtype)
        except Exception as error:
            outcomes[f"{operator}, {dtype}"] = {"raises": f"{type(error).__name__}: {str(error).splitlines()[0]}"}
    return outcomes


RECORD = """
import gpushim, sys
gpushim.patch({id!r})
sys.path.insert(0, {root!r})
from tests.dali.cpu_corpus import run_corpus
from tests.support import record_faithful
patch = gpushim.registry()[{id!r}]
print(record_faithful(patch, run_corpus()))
"""


ROOT = str(Path(__file__).resolve().parents[2])


def recorded_in_a_fresh_interpreter(patch, affected: bool) -> dict:
    """The corpus' outcomes for ``patch``, recorded by an interpreter that imports DALI first with it applied.

    A drift patch acts while DALI imports, which the test process did long ago.
    The record must carry the state the gate derived (``affected``), the
    conditional must take both branches, and no case may raise.
    """
    from tests.support import run_python

    artefacts = {key: os.environ[key] for key in ("MATRIX_ARTEFACTS",) if key in os.environ}
    finished = run_python(RECORD.format(id=patch.id, root=ROOT), env=artefacts)
    assert finished.returncode == 0, finished.stderr[-3000:]
    document = json.loads(Path(finished.stdout.splitlines()[-1]).read_text())
    assert document["state"] == ("applied" if affected else "not-affected")
    outcomes = document["outcomes"]
    assert [sample["values"] for sample in outcomes["conditional, both branches, int32"]] == [
        [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
        [[10, 8, 6, 4], [2, 14, 12, 10], [8, 6, 4, 2]],
    ]
    assert not [name for name, outcome in outcomes.items() if "raises" in outcome]
    return outcomes
