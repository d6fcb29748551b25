"""The states a patch can be in, as ``gpushim.status()`` reports them."""

APPLIED = "applied"  # in place in this process
PENDING = "pending"  # gpushim is active here; applies when the target finishes importing
INACTIVE = "inactive"  # would apply, but nothing called gpushim.patch() in this process
NOT_AFFECTED = "not-affected"  # the installed release (or what it runs with) lacks the bug
NOT_INSTALLED = "not-installed"  # no distribution of the target is installed
DISABLED = "disabled"  # turned off by GPUSHIM_DISABLE
FAILED = "failed"  # could not be applied; the target works as released (see the reason)

ALL = (APPLIED, PENDING, INACTIVE, NOT_AFFECTED, NOT_INSTALLED, DISABLED, FAILED)
