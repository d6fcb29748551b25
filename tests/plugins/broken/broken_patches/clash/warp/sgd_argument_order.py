raise RuntimeError("a patch whose id clashes with gpushim's own is never imported")
