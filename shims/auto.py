"""``import gpushim.auto`` applies every gpushim patch this install needs."""

import gpushim

gpushim.patch()
