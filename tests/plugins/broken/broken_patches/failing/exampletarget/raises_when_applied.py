from gpushim import Patch

patch = Patch(id="exampletarget.raises_when_applied", affected=">=1.0,<3.0", fixed_in="3.0", issue="-", fix="-", summary="-")


@patch.applier
def _apply(module, journal):
    raise RuntimeError("this patch cannot be applied")


@patch.prober
def _probe():
    return None
