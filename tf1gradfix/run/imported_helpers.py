"""Modules of a script's folder that the rewrite changes without restructuring them
(`tf.gfile.Exists` written for TF2 in a data loader) and that a restructured script imports.

The migrated script runs in TF2 and imports the module from its folder: as written, the
module would still call TF1's API there, and the proof would fail on it (or pass on
the original module, which the user's folder would not hold once the script is
written). So the module's rewrite goes with the script's, as a project's model module
does (project.py): the script is proven with it in place, and both are written, or
neither. Only a module opening no session of its own (its findings name no session
and no run: it is no program to prove alone) that one restructured script imports.
Python's parser only.
"""

from __future__ import annotations

import ast
import os

_PROGRAM = frozenset({"TFG103", "TFG105"})   # (a session, a run: a program of its own, proven alone)


def attach(pending: list) -> list:
    """Gives each restructured script (a batch.Outcome) the rewrites of the helper modules it
    imports as companions; returns the outcomes still proven on their own."""
    by_path = {os.path.abspath(o.path): o for o in pending}
    helpers = {key: o for key, o in by_path.items() if not o.companions and not o.group
               and not any(f.code in _PROGRAM for f in o.findings)}
    importers: dict[str, list] = {}
    for script in pending:
        if script.new_source is None or os.path.abspath(script.path) in helpers:
            continue
        for key in _sibling_imports(script.path, script.new_source):
            if key in helpers:
                importers.setdefault(key, []).append(script)
    taken = set()
    for key, scripts in importers.items():
        if len(scripts) != 1:
            continue   # (several scripts: each would write it on its own proof)
        module, script = helpers[key], scripts[0]
        script.companions = {**(script.companions or {}), module.path: (module.new_source, module.snapshot)}
        module.changed, module.restructured, module.new_source = False, False, None   # (until the script's
        # proof writes it: rewrite._companions_follow)
        taken.add(id(module))
    return [o for o in pending if id(o) not in taken]


def _sibling_imports(path: str, source: bytes) -> list[str]:
    """Absolute paths of the `.py` files of the script's folder its imports name."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    folder = os.path.dirname(os.path.abspath(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names if "." not in a.name]
        elif isinstance(node, ast.ImportFrom) and node.level in (0, 1):
            names += [node.module] if node.module and "." not in node.module else \
                [a.name for a in node.names] if node.module is None else []
    return [os.path.join(folder, f"{name}.py") for name in dict.fromkeys(names)]
