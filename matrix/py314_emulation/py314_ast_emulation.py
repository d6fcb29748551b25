"""Python 3.14's ``ast`` on 3.13, for gpushim's matrix: what 3.14 removed is removed at startup.

Installed in an environment, its ``.pth`` file imports this module in every
interpreter there, before anything imports Warp.  Python 3.12 and 3.13 give
out ``ast.Num``, ``Str``, ``Bytes``, ``NameConstant`` and ``Ellipsis``
through a module ``__getattr__`` (which keeps each in the module once asked
for), and ``ast.Constant`` has ``n`` and ``s`` properties; 3.14 has none of them.
"""

import ast

for _owner, _name in [(ast, "__getattr__"), (ast.Constant, "n"), (ast.Constant, "s")] + [
    (ast, name) for name in ("Num", "Str", "Bytes", "NameConstant", "Ellipsis")
]:
    if _name in vars(_owner):
        delattr(_owner, _name)
