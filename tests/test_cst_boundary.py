"""LibCST's internals are touched from one package only: tf1gradfix/cst.

Printing without position bookkeeping, cheap positions and read-only walks
rely on LibCST names that are not its public API. They live in cst/, so a
LibCST upgrade is checked in one place (setup.cfg pins the tested range).
Outside cst/ no module imports a private LibCST module or reads a private
attribute that a LibCST class defines.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import libcst
import libcst.metadata

PACKAGE = Path(__file__).resolve().parent.parent / "tf1gradfix"


def _libcst_private_names() -> set[str]:
    names: set[str] = set()
    for module in (libcst, libcst.metadata):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            for klass in cls.__mro__:
                if klass.__module__.startswith("libcst"):
                    names |= {n for n in vars(klass) if n.startswith("_") and not n.startswith("__")}
    return names


PRIVATE = _libcst_private_names()


def _outside_cst():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "cst" not in path.relative_to(PACKAGE).parts[:1]:
            yield path


def _own_names(tree: ast.AST) -> set[str]:
    """Names the module defines itself (its methods may share a name with a LibCST private)."""
    own = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return own | {t.attr for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
                  for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Attribute)}


def _violations(path: Path) -> list[str]:
    found = []
    tree = ast.parse(path.read_text("utf-8"))
    private = PRIVATE - _own_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("libcst._"):
            found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name.startswith("libcst._")]
        elif isinstance(node, ast.Attribute) and node.attr in private:
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_the_private_names_are_known():
    # the scan below is only as good as this set: it must hold what cst/ itself relies on
    assert {"_codegen", "_metadata", "_visit_and_replace_children"} <= PRIVATE


def test_cst_package_holds_every_use_of_libcst_internals():
    bad = {str(p.relative_to(PACKAGE)): v for p in _outside_cst() if (v := _violations(p))}
    assert not bad, bad


def test_the_scan_sees_a_private_use(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from libcst._nodes.internal import CodegenState\nnode._codegen(state)\n")
    assert len(_violations(sample)) == 2
