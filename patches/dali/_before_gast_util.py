"""What the DALI patches acting before ``nvidia.dali._autograph.pyct.gast_util`` executes share."""

from __future__ import annotations

from types import ModuleType

from gpushim import TargetMismatch

GAST_UTIL = "nvidia.dali._autograph.pyct.gast_util"


def expect_source(module: ModuleType, *lines: str) -> None:
    """Raise TargetMismatch unless the source of ``module``, about to execute, has each of ``lines`` (stripped)."""
    try:
        source = module.__spec__.loader.get_source(module.__name__)
    except Exception as error:
        raise TargetMismatch(f"the source of {module.__name__} cannot be read: {error}") from None
    found = {line.strip() for line in (source or "").splitlines()}
    for line in lines:
        if line not in found:
            raise TargetMismatch(f"{module.__name__} has no line {line!r}")


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
