"""DALI's ``types.Constant(3.0, device="cpu")`` is a 1-element 1-D tensor, not a scalar (DALI up to 1.32.0).

What breaks.  A Python scalar made a constant node (``types.Constant``
with ``device``, ``layout`` or other operator arguments, and the scalars DALI
promotes to constant nodes itself, as ``fn.cast(3.0, dtype=...)`` does)
reaches the ``Constant`` operator without a shape, and the operator, unable
to tell a scalar from a list of one, makes each sample a 1-D tensor of shape
``(1,)``: a pipeline returning ``types.Constant(3.0, device="cpu")`` gives
batches of shape ``(N, 1)`` instead of ``(N,)``, and arithmetic with it
broadcasts accordingly.  NumPy scalars and 0-d arrays were right.  Nothing
raises.  Every release on PyPI up to 1.32.0 does this (1.23.0, the oldest,
was run), on every Python.

Fixed upstream.  NVIDIA/DALI#5191 (merged November 2023), released in
1.33.0, not in 1.32.0 as first reported.  DALI's repository is too large to
fetch here, so the range is read from the wheels: run with a CPU pipeline,
1.23.0, 1.26.0, 1.31.0 and 1.32.0 give ``(1,)`` per sample, 1.33.0, 1.34.0
and 1.35.0 give ``()``, and 1.32.0's and 1.33.0's ``types.ConstantNode``
differ in that one place, the shape #5191 describes.  No cell installs
1.33.0, so 1.35.0, whose ``ConstantNode`` is 1.33.0's, records the reference.

How the fix works.  1.33.0's ``ConstantNode`` gives a value that is neither
an array nor a list its shape, ``()``, and a list or tuple ``(len,)``, where
no shape is asked for.  The patch wraps ``types.ConstantNode``, which
``types.Constant`` looks up among its module's globals at each call: a call
that binds, with no ``shape`` and a value that DALI's own
``_is_compatible_array_type`` does not take for an array, goes on with that
shape; any other call is the release's.  The wrapper reads
``_is_compatible_array_type`` from ``types`` at each call.

Not backported.  1.33.0 also hides ``fn.constant`` from the documentation;
``fn.constant(fdata=3.0)`` called directly still gives ``(1,)`` in 1.33.0,
and is left as it is.

The probe.  A CPU pipeline (``device_id=None``) of batch size 2 returning
``types.Constant(3.0, device="cpu")``, built and run once: each sample must
have the shape ``()``.  No device is needed.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="dali.constant_scalar_shape",
    affected="<1.33.0",
    fixed_in="1.33.0",
    issue="NVIDIA/DALI#5191",
    fix="NVIDIA/DALI#5191",
    summary='types.Constant(3.0, device="cpu") and promoted scalars are (1,)-shaped tensors, not scalars.',
    module="nvidia.dali.types",
)

# ConstantNode(device, value, dtype, shape, layout, **kwargs)
_CONSTANT_NODE = Parameters("device", "value", "dtype", "shape", "layout")


def _bound(device, value, dtype, shape, layout, **kwargs):
    return device, value, dtype, shape, layout, kwargs


def _fixed(types):
    def constant_node(wrapped, instance, args, kwargs):
        try:
            device, value, dtype, shape, layout, others = _bound(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call DALI itself rejects, with its own message
        if shape is not None or types._is_compatible_array_type(value):
            return wrapped(*args, **kwargs)
        shape = (len(value),) if isinstance(value, (list, tuple)) else ()
        return wrapped(device, value, dtype, shape, layout, **others)

    return constant_node


@patch.applier
def _apply(types, journal):
    expect(types, "_is_compatible_array_type", callable)
    _CONSTANT_NODE.check(expect(types, "ConstantNode", callable), leading=True)
    journal.wrap(types, "ConstantNode", _fixed(types))


@patch.prober
def _probe():
    """``types.Constant(3.0, device="cpu")`` out of a CPU pipeline: scalars, shape ``()``."""
    import numpy as np
    from nvidia.dali import pipeline_def, types

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def constant():
        return types.Constant(3.0, device="cpu")

    pipeline = constant()
    pipeline.build()
    (batch,) = pipeline.run()
    shapes = {np.array(batch[i]).shape for i in range(len(batch))}
    return None if shapes == {()} else f'types.Constant(3.0, device="cpu") gives samples of shape {sorted(shapes)}'
