"""What the DALI patches acting before ``nvidia.dali._autograph.pyct.gast_util`` executes share."""

from __future__ import annotations

GAST_UTIL = "nvidia.dali._autograph.pyct.gast_util"


def conditional_pipeline_bug() -> str | None:
    """The probe of both: a conditional in a CPU pipeline, through the vendored autograph and gast_util."""
    import numpy as np
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def halves():
        value = fn.external_source(source=lambda: [np.array(3, np.int32), np.array(8, np.int32)], batch=True)
        if value > 4:
            value = value // 2
        return value

    pipe = halves()
    pipe.build()
    (out,) = pipe.run()
    got = [int(np.asarray(sample)) for sample in out]
    if got != [3, 4]:
        return f"the conditional pipeline gives {got}, not [3, 4]"
    return None
