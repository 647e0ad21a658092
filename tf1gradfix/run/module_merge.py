"""One migration of a model module several scripts share, from the one each script's
rewrite made of it (project_groups.py).

Each script's rewrite writes the module's class (or builders) with the step functions
that script's runs need: a training script gets `train_step`, an evaluation script
`compute_loss_accuracy`. The shared module holds all of them: the largest migration,
plus each definition another script's migration adds (a method of a class, a function,
an import). A definition both wrote differently is kept as the largest has it, unless
the other script calls it with other parameters (other feeds): then the scripts need two
modules, and the group is refused. Each script is then proven with the one module.
Python's parser only.
"""

from __future__ import annotations

import ast
import re

from tf1gradfix.records import record


@record
class Version:
    """What one script's rewrite made of the module."""
    script: str        # the script's path
    module: bytes      # the module as that rewrite writes it
    uses: bytes        # the script as that rewrite writes it (what it calls of the module)
    whole: bool = False   # the module's own rewrite, run as a script (own_runs): all of it, in its order


@record
class Conflict:
    """Why the versions cannot be one module."""
    name: str          # `Class.method` or `function`
    script: str        # the script whose rewrite needs its own form of it
    other: str         # the script whose rewrite the module follows


_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPORT = (ast.Import, ast.ImportFrom)


def merge(versions: list[Version]) -> bytes | Conflict:
    """The one module all the versions' scripts can run with, or the definition they
    cannot share. The largest version is the base (a training script's, with its steps), or
    the module's own rewrite where it is run as a script (whole, with its `__main__` block)."""
    order = sorted(range(len(versions)), key=lambda i: (not versions[i].whole, -len(versions[i].module), i))
    base = versions[order[0]]
    lines = base.module.decode("utf-8").splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    for index in order[1:]:
        other = versions[index]
        if other.module == base.module:
            continue
        done = _add(lines, other, base.script)
        if isinstance(done, Conflict):
            return done
        lines = done
    merged = "".join(lines).encode("utf-8")
    ast.parse(merged)   # (a merge that does not parse is a bug of ours: the caller reports it)
    return merged


def _add(lines: list[str], other: Version, base_script: str) -> list[str] | Conflict:
    """`lines` (the module so far) with what `other` has and they lack."""
    tree = ast.parse("".join(lines))
    theirs = ast.parse(other.module)
    their_lines = other.module.decode("utf-8").splitlines(keepends=True)
    ours = {s.name: s for s in tree.body if isinstance(s, _DEFINITION)}
    calls = other.uses.decode("utf-8", errors="replace")
    inserts: list[tuple[int, str]] = []   # (after this line, text)
    have = {ast.dump(s) for s in tree.body if isinstance(s, _IMPORT)}
    last_import = max((s.end_lineno for s in tree.body if isinstance(s, _IMPORT)), default=0)
    for stmt in theirs.body:
        if isinstance(stmt, _IMPORT):
            if ast.dump(stmt) not in have:
                inserts.append((last_import, _text(their_lines, stmt)))
            continue
        if not isinstance(stmt, _DEFINITION):
            continue   # (constants and docstrings: the base's; the proof runs every script with it)
        mine = ours.get(stmt.name)
        if mine is None:
            inserts.append((len(lines), "\n\n" + _text(their_lines, stmt)))
        elif isinstance(stmt, ast.ClassDef) and isinstance(mine, ast.ClassDef):
            found = _add_members(mine, stmt, their_lines, calls, other.script, base_script, inserts)
            if found is not None:
                return found
        elif (isinstance(stmt, ast.ClassDef) != isinstance(mine, ast.ClassDef) or _other_call(mine, stmt)) \
                and _called(stmt.name, calls):
            return Conflict(stmt.name, other.script, base_script)
    for _, at, text in sorted(((k, *item) for k, item in enumerate(inserts)), key=lambda item: (-item[1], -item[0])):
        lines[at:at] = text.splitlines(keepends=True)
    return lines


def _add_members(mine: ast.ClassDef, theirs: ast.ClassDef, their_lines: list[str], calls: str,
                 script: str, base_script: str, inserts: list) -> Conflict | None:
    """The methods of `theirs` the class `mine` lacks, appended to it; a method both have
    in other forms, and the other script calls, is a conflict."""
    members = {s.name: s for s in mine.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for stmt in theirs.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        have = members.get(stmt.name)
        if have is None:
            inserts.append((mine.end_lineno, "\n" + _text(their_lines, stmt)))
        elif stmt.name != "__init__" and _other_call(have, stmt) and _called(stmt.name, calls):
            return Conflict(f"{mine.name}.{stmt.name}", script, base_script)
    return None


def _other_call(mine: ast.stmt, theirs: ast.stmt) -> bool:
    """Whether the two forms of a function are called otherwise (other parameters: other
    feeds). The same parameters under the same name compute the same fetches, whichever
    helper a body calls (the one that shares the forward code, or its own copy of it):
    the base's is kept, and the proof of each script with it says whether that holds."""
    return ast.dump(mine.args) != ast.dump(theirs.args) or \
        [ast.dump(d) for d in mine.decorator_list] != [ast.dump(d) for d in theirs.decorator_list]


def _text(lines: list[str], stmt: ast.stmt) -> str:
    """The statement's source lines, decorators included."""
    start = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
    text = "".join(lines[start - 1:stmt.end_lineno])
    return text if text.endswith("\n") else text + "\n"


def _called(name: str, text: str) -> bool:
    """Whether the script's rewrite names it (a call, an attribute): then its form matters."""
    return re.search(rf"\b{re.escape(name)}\b", text) is not None
