"""What gpushim raises and warns with.

A patch never breaks the import of its target unless the user asked for that
with ``GPUSHIM_STRICT=1``: failures become a :class:`GpushimWarning` and a
``failed`` status record instead of an exception.
"""


class GpushimWarning(UserWarning):
    """A patch could not be applied, or a gpushim switch has an invalid value."""


class PatchError(Exception):
    """A patch failed; raised only in strict mode (``GPUSHIM_STRICT=1``)."""


class ShapeError(Exception):
    """What a patch replaces is not shaped as the patch expects.

    Raised from a patch's ``apply`` (directly, or by :class:`gpushim.Site`
    when an attribute is missing); the patch is then recorded as ``failed``
    with this message as the reason.
    """


class NotAffected(Exception):
    """This install does not have the bug although its release is in range.

    Raised from a patch's ``apply`` before it changes anything, for
    conditions the release alone does not decide (a NumPy major version,
    say); the patch is then recorded as ``not-affected`` with this reason.
    """
