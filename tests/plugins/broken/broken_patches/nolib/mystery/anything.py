raise RuntimeError("a patch of a library folder that cannot be read is never imported")
