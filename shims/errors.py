"""What gpushim raises and warns with.

A patch never breaks the import of its target unless the user asked for that
with ``GPUSHIM_STRICT=1``: failures become a :class:`GpushimWarning` and a
``failed`` status record instead of an exception.
"""

# What a program's signal handlers raise (sys.exit() on SIGTERM, a Ctrl-C) or a generator's close throws in: these
# stop the program's import wherever they land, as they would without gpushim, and fail no patch.
INTERRUPTIONS = (KeyboardInterrupt, SystemExit, GeneratorExit)


class GpushimWarning(UserWarning):
    """A patch could not be applied, or a gpushim switch has an invalid value."""


class PatchError(Exception):
    """One or more patches failed; raised only in strict mode (``GPUSHIM_STRICT=1``)."""


class TargetMismatch(Exception):
    """The installed target is not what the patch was written for.

    Its release cannot be read or disagrees with the module, or what the patch
    replaces is missing or shaped otherwise.  Raised from a patch's ``apply``
    (directly, or by :class:`gpushim.Journal` when an attribute is missing) or
    by the release gate; the patch is then recorded as ``failed`` with this
    message as the reason.
    """


class NotAffected(Exception):
    """This install does not have the bug although its release is in range.

    Raised from a patch's ``apply`` before it changes anything, for
    conditions that neither the release nor ``only_with`` decides; the
    patch is then recorded as ``not-affected`` with this reason.
    """


class InvalidDeclaration(Exception):
    """A patch module does not declare a valid :class:`gpushim.Patch` for its own id."""


class ProbeCannotRun(Exception):
    """A probe cannot run on this install: something it needs and the bug does not is missing.

    Raised from a patch's probe (a CUDA library the reproduction loads, say);
    the self-test then says why instead of giving a verdict on the bug, and
    does not count it as an error of the patch.
    """
