from gpushim import Patch

patch = Patch(
    id="exampletarget.exits_when_prepared",
    affected=">=1.0,<3.0",
    fixed_in="3.0",
    issue="-",
    fix="-",
    summary="-",
    before="gpushim_example_target",
)


@patch.preparer
def _prepare(module, journal):
    raise SystemExit("this patch exits before its module executes")


@patch.prober
def _probe():
    return None
