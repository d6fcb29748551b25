from gpushim import Patch

patch = Patch(id="exampletarget.another_id", affected=">=1.0", fixed_in="3.0", issue="-", fix="-", summary="-")
