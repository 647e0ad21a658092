"""Scripts that share a model module (train.py and eval.py both `from model import Net`):
one group, migrated whole or not at all.

Each script is rewritten with its modules as a project of its own (project.py); a module
they share is then migrated once, for all of them (module_merge.py), and every script is
proven with that one module. The group is written only when every script is proven
(rewrite_verify.py); a blocker of any script leaves every file of the group intact, and
each script's blockers are reported in the same run.
"""

from __future__ import annotations

import ast
import os

from tf1gradfix.model.refusals import diagnostic
from tf1gradfix.records import replace
from tf1gradfix.run import module_merge, own_runs, project
from tf1gradfix.run.findings import Finding


def groups(projects: list) -> list[list]:
    """The projects, joined where they share a module (any depth of sharing), in order."""
    out: list[list] = []
    for each in projects:   # (a module run as a script of its own is one of them: own_runs)
        mine = {os.path.abspath(m) for m in (each.script, *each.modules)}
        joined = [g for g in out if mine & {os.path.abspath(m) for p in g for m in (p.script, *p.modules)}]
        group = [p for g in joined for p in g] + [each]
        out = [g for g in out if all(g is not j for j in joined)] + [group]
    order = {id(p): i for i, p in enumerate(projects)}
    return sorted(out, key=lambda g: min(order[id(p)] for p in g))


def outcomes(group: list, mode: str, codes_for, limit: int) -> list:
    """The outcome of each file of the group (each script, then its modules)."""
    from tf1gradfix.run import batch

    reads = [project.read_files(p, mode, limit) for p in group]
    if any(isinstance(r, list) for r in reads):
        return [o for r in reads for o in (r if isinstance(r, list) else [])]
    results = [project.processed(p, r[0], codes_for(p.script)) for p, r in zip(group, reads)]
    blocked = [p.script for p, r in zip(group, results) if r.refused or r.errors or p.script not in r.new]
    try:
        merged = {} if blocked else _merged(group, results, reads)
    except Exception as exc:  # noqa: BLE001 - a bug of ours must not cost the user a file or the run
        first = group[0].script
        return [batch.Outcome(p, error=batch.internal_error(first, exc) if p == first else None)
                for p in dict.fromkeys(q for each in group for q in (each.script, *each.modules))]
    if blocked or isinstance(merged, tuple):
        results = [_refused(p, r, reads[i][0], codes_for(p.script), blocked, merged if isinstance(merged, tuple)
                            else None) for i, (p, r) in enumerate(zip(group, results))]
    else:
        for p, r in zip(group, results):
            r.new.update({m: merged[m] for m in (p.script, *p.modules) if m in merged})
    finish_mode = batch.PROPOSE if mode == batch.WRITE and not blocked and not isinstance(merged, tuple) else mode
    out = [o for p, r, (datas, shots) in zip(group, results, reads)
           for o in project.finish(p, r, finish_mode, codes_for(p.script), datas, shots)]
    scripts = tuple(p.script for p in group)
    if finish_mode != mode:   # (--no-verify: every file of the group written at once, or none)
        news = {o.path: (o.new_source, o.snapshot) for o in out if o.path in scripts and o.new_source is not None}
        news.update({m: v for o in out for m, v in (o.companions or {}).items()})
        datas = {p: d for r in reads for p, d in r[0].items()}
        written = {}
        for o in out:
            o.new_source, o.companions, o.restructured = None, None, False
            written.setdefault(o.path, o)
        project.write_all(list(written.values()), news, datas)
        return list(written.values())
    for o in out:
        if o.path in scripts and o.companions is not None:
            o.group = scripts
    return out


def _merged(group: list, results: list, reads: list) -> dict | tuple:
    """Module path -> its one migration for every script importing it; or (path, diagnostic)
    of a definition two scripts need in different forms."""
    merged = {}
    modules = dict.fromkeys(m for p in group for m in p.modules)
    for module in modules:
        versions = [module_merge.Version(p.script, r.new.get(module, reads[i][0][module]), r.new[p.script])
                    for i, (p, r) in enumerate(zip(group, results)) if module in p.modules]
        versions += [module_merge.Version(p.script, r.new[p.script], r.new[p.script], whole=True)
                     for p, r in zip(group, results) if p.script == module]   # (run as a script: own_runs)
        found = module_merge.merge(versions)
        if isinstance(found, module_merge.Conflict):
            line, col = _line_of(reads, module, found.name)
            return (module, diagnostic(line, col, "project_module_forms",
                                       module=os.path.basename(module)[:-3], name=found.name,
                                       script=os.path.basename(found.script), other=os.path.basename(found.other)))
        merged[module] = found
    return merged


def _line_of(reads: list, module: str, name: str) -> tuple[int, int]:
    """Where the original module defines `name`'s class or function (else its first line)."""
    import ast

    data = next(r[0][module] for r in reads if module in r[0])
    top = name.partition(".")[0]
    stmt = next((s for s in ast.parse(data).body if getattr(s, "name", None) == top), None)
    return (stmt.lineno, stmt.col_offset + 1) if stmt is not None else (1, 1)


def _refused(each, result, datas: dict, codes, blocked: list[str], conflict: tuple | None):
    """The project's result when its group is not migrated: each file its safe fixes, its
    own blockers, and, for a script with none of its own, why it is left as it is."""
    if conflict is not None and conflict[0] in each.modules and codes.wants(conflict[1][2]):
        line, col, code, message, safety = conflict[1]
        result.findings[conflict[0]].append(Finding(conflict[0], line, col, code, message, safety, False))
    if each.script not in blocked and conflict is None:
        stmt = next((s for s in each.imports if s is not None), None)
        others = ", ".join(os.path.basename(b) for b in blocked)
        if stmt is None:   # (the model module run as a script of its own: own_runs)
            stmt = next(s for s in ast.parse(datas[each.script]).body if own_runs.is_main_block(s))
            found = diagnostic(stmt.lineno, stmt.col_offset + 1, "project_module_blocked", other=others,
                               module=os.path.basename(each.script)[:-3])
        else:
            found = diagnostic(stmt.lineno, stmt.col_offset + 1, "project_group_blocked", other=others)
        line, col, code, message, safety = found
        if codes.wants(code):
            result.findings[each.script].append(Finding(each.script, line, col, code, message, safety, False))
    if result.refused:
        return result
    result.new = {}
    return project._safe_only(result, {p: project._safe_source(p, datas[p], codes) for p in result.paths})
