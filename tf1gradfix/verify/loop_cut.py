"""The step budget ends the training loop, not the program.

Under ``--steps N`` the run that would begin step N+1 does not happen:
:func:`cut` raises :class:`Cut` from it instead.  The user's script is run
with every ``for`` and ``while`` loop's body guarded (:func:`compile_script`),
so the innermost loop around that run ends there, as if its range had been
shorter, and every loop it ran in ends at its next iteration.  What follows
the loop (an evaluation, the final prints and plots, saving) runs on both
sides and is compared like any other output.

The modules of the script's own folder (a project's model and training
modules) are imported with their loops guarded too (:class:`GuardImports`).
A run outside any guarded loop (a loop in an installed package, a step
written out by hand) cannot be cut that way: the side then ends at once, as
it did before (runner_common.stop_here), and the report says what was not run.
"""

from __future__ import annotations

import ast
import builtins
import importlib.abc
import importlib.machinery
import os
import sys
import types

NAME = "__tf1gradfix_loop__"


class Cut(BaseException):
    """Raised by the run that would begin the step past the budget.

    A BaseException: a user's ``except Exception`` around a step must not
    swallow it and train on.
    """


_LOOPS: dict[str, list[tuple[int, int]]] = {}   # file -> (first, last) line of each guarded loop
_ENDED: set = set()     # (id(frame), first line) of the loops that must end at their next iteration
_FRAMES: list = []      # those frames, kept alive so that their ids are not reused
CUTS: list = []         # (steps, file, first line) of each cut that ended a loop


class _Guard(ast.NodeTransformer):
    """``for/while ...: BODY`` -> ``for/while ...: if ended(L): break; try: BODY except Cut: break``."""

    def __init__(self, loops: list):
        self.loops = loops

    def _guard(self, node):
        self.generic_visit(node)
        self.loops.append((node.lineno, node.end_lineno or node.lineno))
        head = ast.parse(f"if {NAME}.ended({node.lineno}):\n    break\n"
                         f"try:\n    pass\nexcept {NAME}.Cut:\n    break\n").body
        head[1].body = node.body
        for stmt in head:
            ast.copy_location(stmt, node.body[0])
        node.body = head
        return node

    visit_For = visit_While = _guard


def compile_script(script: str):
    """The script's code with its loops guarded, or None (unreadable or not Python: run it as it is)."""
    try:
        with open(script, "rb") as fh:
            tree = ast.parse(fh.read(), script)
    except (OSError, SyntaxError, ValueError):
        return None
    loops: list = []
    tree = ast.fix_missing_locations(_Guard(loops).visit(tree))
    try:
        code = compile(tree, script, "exec")
    except (SyntaxError, ValueError):
        return None
    _LOOPS[script] = loops
    return code


class _GuardedLoader(importlib.machinery.SourceFileLoader):
    """A module of the program's folder, compiled with its loops guarded (never through __pycache__)."""

    def get_code(self, fullname):
        code = compile_script(self.path)
        return code if code is not None else super().get_code(fullname)

    def exec_module(self, module):
        setattr(module, NAME, sys.modules[__name__])
        super().exec_module(module)


class GuardImports(importlib.abc.MetaPathFinder):
    """Modules found under ``folder`` (not in an installed environment inside it) load guarded.

    Only the path finder is asked, so other import hooks of the runner are not re-entered.
    """

    def __init__(self, folder: str):
        self.folder = os.path.join(os.path.realpath(folder), "")

    def find_spec(self, name, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader:
            return None
        origin = os.path.realpath(spec.origin or "")
        if not origin.startswith(self.folder) or any(
                part in ("site-packages", "dist-packages") for part in origin[len(self.folder):].split(os.sep)):
            return None
        spec.loader = _GuardedLoader(spec.loader.name, spec.loader.path)
        return spec


def run_as_main(code, script: str) -> dict:
    """Run ``code`` as the ``__main__`` module of ``script``, as runpy.run_path would; its globals."""
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=script, __builtins__=builtins, __loader__=None,
                           __spec__=None, __package__=None, __cached__=None)
    setattr(module, NAME, sys.modules[__name__])
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
    return module.__dict__


def ended(first: int) -> bool:
    """Called at the top of each iteration: did the budget cut this loop (in this call)?"""
    return (id(sys._getframe(1)), first) in _ENDED


def cut(steps: int) -> bool:
    """Mark every guarded loop the current run is in as ended; True if there is one
    (the caller then raises Cut), False if the run is outside every guarded loop."""
    found = []
    frame = sys._getframe(1)
    while frame is not None:
        for first, last in _LOOPS.get(frame.f_code.co_filename, ()):
            if first < frame.f_lineno <= last:
                found.append((frame, first))
        frame = frame.f_back
    for frame, first in found:
        _ENDED.add((id(frame), first))
        _FRAMES.append(frame)
    if found:
        inner = found[0]
        CUTS.append((steps, inner[0].f_code.co_filename, inner[1]))
    return bool(found)
