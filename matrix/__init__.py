"""The release matrix's tooling: the cells of ``matrix/*.toml``, each cell's derived states, and RESULTS.md.

Run by ``noxfile.py`` from the repository's root; not part of the installed
gpushim, nor of the tests, which import it for the cells' references.
"""
