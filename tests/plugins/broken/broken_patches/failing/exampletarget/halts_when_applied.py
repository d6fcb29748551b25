from gpushim import Patch

patch = Patch(id="exampletarget.halts_when_applied", affected=">=1.0,<3.0", fixed_in="3.0", issue="-", fix="-", summary="-")


class Halt(BaseException):
    """Neither an Exception nor KeyboardInterrupt."""


@patch.applier
def _apply(module, journal):
    raise Halt("this patch halts")


@patch.prober
def _probe():
    return None
