"""The example distribution's own test suite runs gpushim's contract on its patches."""

from gpushim.testing import Contract


class TestGpushimContract(Contract):
    distribution = "gpushim-example-patches"
