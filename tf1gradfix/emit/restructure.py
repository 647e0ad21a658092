"""Entry point: rewrite a TF1 Session/placeholder program into TF2 as a whole,
or refuse and leave it byte-for-byte intact with a manual diagnostic.

The rewrite of the program itself is program_rewrite.py's (its stages: owners,
model, execution sites and slices, state, tape, assembly); here, the readings of
the module it is tried on (a build call moved into `__init__`, a base class
folded in, a statement form made plain) and the result, with the refusals'
positions. A model class goes through model_classes first and comes out of
model_class. Never imports TensorFlow, never runs the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import cast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider

from tf1gradfix import legacy
from tf1gradfix.constructs import (class_bases, fresh_graph_loops, guarded_graph, host_builds, inlined_calls, layer_copies,
                                   model_classes, script_builds, script_scopes, statement_forms, wrapper_calls)
from tf1gradfix.rules import catalog as catalog_module
from tf1gradfix.cst.metadata import AnalysisWrapper
from tf1gradfix.detect.detector import shared_names
from tf1gradfix.detect.names import NameResolver
from tf1gradfix.cst.syntax import Refusal
from tf1gradfix.model.refusals import diagnostic
from tf1gradfix.emit.positions import position
from tf1gradfix.emit.program_rewrite import ProgramRewrite

Diagnostic = tuple[int, int, str, str, str]
from tf1gradfix.emit.handled import FIXED_WHEN_RESTRUCTURED, HANDLED  # noqa: E402,F401 (see there)


@dataclass(frozen=True)
class Restructured:
    """The new module, or why there is none: the refusals (TFG9xx, manual), or `no_session`,
    the module opens no session to start from and the engine says why (run/sessionless.py).
    A restructuring that gives up without a reason cannot be made."""
    new_module: cst.Module | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    no_session: bool = False
    legacy: tuple[legacy.Found, ...] = ()   # the legacy training bugs of the diagnostics, with their variables
    reshape: frozenset[int] = frozenset()   # lines refused for their statement form alone (statement_forms)
    first_reason: str | None = None   # the reason (refusals.toml id) of the first refusal

    def __post_init__(self) -> None:
        if self.new_module is None and not self.no_session and not any(d[4] == "manual" for d in self.diagnostics):
            raise ValueError("a restructuring that gives up must say why (a refusal, or no session)")
        if self.no_session and (self.new_module is not None or self.diagnostics):
            raise ValueError("a module without a session is neither restructured nor refused")


class _Meta(cst.MetadataDependent):
    # Names are resolved through the scope analysis (names.NameResolver); the
    # whole-tree qualified-name table would cost a third of the analysis.
    METADATA_DEPENDENCIES = (ScopeProvider, PositionProvider)
    names: NameResolver   # (set once the metadata is resolved)
    guarded: frozenset[int]   # lines of statements moved out of host `if`s (guarded_graph)


def restructure(module: cst.Module, path: str, wrapper: MetadataWrapper | None = None, renames=None) -> Restructured:
    """`wrapper`: the module's MetadataWrapper, to share resolved metadata with detection.
    `renames`: rename plans of chains of `module` (fix_renames), applied where
    the rewrite copies their code; the new module is to be printed with them too.
    A module whose script builds a model's graph by calling a method after its
    construction is read with the call in `__init__` first (host_builds), as is the graph
    code it builds on the instance right after (script_builds), a class
    with a plain base of the file with the base folded in (class_bases); its
    refusal gives way to the reading of the module as written, unless that refuses too:
    the class's reading then names the construct that stopped it. A script's variable scope
    opened around the calls of one function is read as the function opening it
    (script_scopes), where that reading is rewritten."""
    scoped = script_scopes.folded(module)
    if scoped is not None:
        read = restructure(scoped.module, path)
        if read.new_module is not None:
            return replace(read, diagnostics=[(scoped.origin(d[0]), *d[1:]) for d in read.diagnostics])
    based = class_bases.folded(module)
    built = host_builds.moved(based or module) or based
    scripted = script_builds.folded(built or module)
    built = scripted.module if scripted is not None else built
    as_built = None
    if built is not None:
        as_built = statement_forms.restructured(built, lambda plain: _restructure(plain, AnalysisWrapper(plain)))
        if scripted is not None:   # (the script's statements read in `__init__`: at the user's lines)
            as_built = replace(as_built, diagnostics=[(scripted.origin(d[0]), *d[1:]) for d in as_built.diagnostics]
                               + ([script_builds.note(scripted)] if as_built.new_module is not None else []))
        wrapped = wrapper_calls.read(built) if as_built.new_module is None else None
        if wrapped is not None:   # (and its layer wrappers read as their calls: wrapper_calls)
            again = statement_forms.restructured(wrapped.module, lambda plain: _restructure(plain, AnalysisWrapper(plain)))
            as_built = replace(again, diagnostics=[(wrapped.origin(d[0]), *d[1:]) for d in again.diagnostics])
        if as_built.new_module is not None:
            return as_built
    shaped = statement_forms.restructured(
        module, lambda plain: _restructure(plain, AnalysisWrapper(plain)) if plain is not module
        else _restructure(module, wrapper or AnalysisWrapper(module), renames=renames or {}))
    if shaped.new_module is not None:
        return shaped
    passes = _passes(module, shaped)
    if passes is not None and passes.new_module is not None:
        return passes
    # (a reading still refused as a graph built apart names less than the class's with its build call)
    built_read = as_built is not None and not as_built.no_session
    guarded = _guarded(module, shaped)
    if guarded is not None and not (built_read and guarded.first_reason in _APART):
        return guarded if guarded.new_module is not None or built is not None else _apart(module, guarded)
    if passes is not None and not (built_read and passes.first_reason in _APART):
        return passes if built is not None else _apart(module, passes)
    if as_built is not None and built_read:
        return _outside(module, as_built)
    return _outside(module, shaped if built is not None else _apart(module, shaped))


def _guarded(module: cst.Module, shaped: Restructured) -> Restructured | None:
    """The module read with the graph statements of host `if`s outside them (guarded_graph),
    with the model functions it calls once as their statements (inlined_calls), or both, in
    that order, diagnostics at the user's lines: the first rewritten, else the first reading
    when the module as written is first refused inside such an `if`, or for a graph built and
    run in different functions that the inlining joined (it names what stops it). Layer
    wrappers are read as the layer calls they make first (wrapper_calls)."""
    inlining = _inlined(module)
    lowering = guarded_graph.lowered(module)
    readings: list[tuple[inlined_calls.Inlining | None, guarded_graph.Lowering | None]] = \
        [(None, lowering)] if lowering is not None else []
    if inlining is not None:
        both = guarded_graph.lowered(inlining.module)
        readings += [(inlining, None)] + ([(inlining, both)] if both is not None else [])
    scoped = _inlined(module, scoped=True)
    if scoped is not None and (inlining is None or scoped.functions != inlining.functions):
        readings.append((scoped, None))   # (functions opening scopes too: a reading of its own)
    repeated = _inlined(module, repeated=True)
    if repeated is not None and (inlining is None or repeated.functions != inlining.functions):
        readings.append((repeated, None))   # (layer functions called more than once too: last)
    first = next((d[0] for d in shaped.diagnostics if d[4] == "manual"), None)
    report = None
    for inline, lower in readings:
        read = _read(lower.module if lower is not None else cast(inlined_calls.Inlining, inline).module,
                     lower.moved if lower is not None else frozenset())
        if read.no_session:
            continue
        back = [lower.origin] if lower is not None else []
        back += [inline.origin] if inline is not None else []
        if read.new_module is not None or report is None and (
                inline is None and lower is not None and any(a <= (first or 0) <= b for a, b in lower.spans)
                or inline is not None and lower is None and shaped.first_reason in _JOINED):
            report = replace(read, new_module=read.new_module and guarded_graph.restored(
                read.new_module, lower.tests if lower is not None else frozenset()),
                diagnostics=[(_through(back, d[0]), *d[1:]) for d in read.diagnostics])
            if read.new_module is not None:
                copied = layer_copies.notes(module, inline.copies) if inline is not None else []
                return replace(report, diagnostics=report.diagnostics + copied)
    return report


def _inlined(module: cst.Module, scoped: bool = False, repeated: bool = False) -> inlined_calls.Inlining | None:
    """The module with its layer wrappers read as their calls, then its functions called once
    as their statements (`scoped`: those opening scopes of a literal name too; `repeated`:
    layer functions making `tf.Variable`s at several calls too); None where neither reads
    anything."""
    wrapped = wrapper_calls.read(module)
    inlining = inlined_calls.inlined(wrapped.module if wrapped is not None else module, scoped, repeated)
    if wrapped is None or inlining is None:
        return inlining or wrapped
    return inlined_calls.Inlining(inlining.module, lambda line: wrapped.origin(inlining.origin(line)),
                                  wrapped.functions + inlining.functions, inlining.copies)


def _passes(module: cst.Module, shaped: Restructured) -> Restructured | None:
    """The module read with its loops of fresh graphs as functions called per pass
    (fresh_graph_loops), diagnostics at the user's lines: rewritten, or its refusal where
    the module as written is first refused inside such a loop (it names what stops it)."""
    outlining = fresh_graph_loops.outlined(module)
    if outlining is None:
        return None
    read = _read(outlining.module, frozenset())
    if read.no_session:
        return None
    back = read.new_module and fresh_graph_loops.restored(read.new_module)
    first = next((d[0] for d in shaped.diagnostics if d[4] == "manual"), 0)
    if back is None and (read.new_module is not None or not any(a <= first <= b for a, b in outlining.spans)):
        return None
    return replace(read, new_module=back, diagnostics=[(outlining.origin(d[0]), d[1], d[2],
                                                        fresh_graph_loops.spoken(d[3]), d[4]) for d in read.diagnostics])


# refusals of a graph built and run in different functions: where the functions read where they are
# called are refused too, that reading's refusal names what stops the program (inlined_calls)
_APART = frozenset({"graph_built_and_run_apart", "graph_in_several_functions"})
# (what reading functions where they are called may lift: its own refusal then names what stops it)
_JOINED = _APART | {"default_graph_shared"}


def _read(module: cst.Module, moved: frozenset[int]) -> Restructured:
    """A reading's restructuring; one that moved statements out of `if`s is read as it is (the
    plain statement forms would move the lines `guarded_graph.check` reads)."""
    if moved:
        return _restructure(module, AnalysisWrapper(module), guarded=moved)
    return statement_forms.restructured(module, lambda plain: _restructure(plain, AnalysisWrapper(plain)))


def _through(maps, line: int) -> int:
    for back in maps:
        line = back(line)
    return line


def _apart(module: cst.Module, shaped: Restructured) -> Restructured:
    """A refusal naming a method a script calls after the class's construction, with
    why that call is not read as the end of `__init__` (host_builds) at its line."""
    named = [d[3] for d in shaped.diagnostics if d[2] == "TFG904"]

    def refused(method: str) -> bool:   # (a TFG904 of the module names the method)
        return any(f"`{method}`" in text or f"`{method}()`" in text for text in named)

    found = [hit for hit in host_builds.apart(module) if refused(hit[3])]
    chosen = [hit for hit in host_builds.dispatched(module) if refused(hit[3])][:1]
    if not found and not chosen:
        return shaped
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    apart = [diagnostic(positions[stmt].start.line, positions[stmt].start.column + 1, "build_call_apart",
                        call=call, cls=cls, why=why) for stmt, call, cls, _, why in found]
    apart += [diagnostic(positions[stmt].start.line, positions[stmt].start.column + 1, "build_call_dispatched",
                         call=call, classes=classes, maker=maker) for stmt, call, classes, _, maker in chosen]
    return replace(shaped, diagnostics=apart + list(shaped.diagnostics))


def _outside(module: cst.Module, refused: Restructured) -> Restructured:
    """A refusal, with the first statement a script builds on a model instance after making it
    that is not read as the end of `__init__`, and why (script_builds), at its line."""
    if refused.new_module is not None or refused.no_session:
        return refused
    found = script_builds.apart(module)
    if not found:
        return refused
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return replace(refused, diagnostics=[
        diagnostic(positions[stmt].start.line, positions[stmt].start.column + 1, "script_graph_apart",
                   instance=instance, cls=cls, why=why) for stmt, instance, cls, why in found] + list(refused.diagnostics))


def _restructure(module: cst.Module, wrapper: MetadataWrapper, plan=None, renames=None,
                 guarded: frozenset[int] | None = None) -> Restructured:
    """`plan`: the model class `module` was desugared for (model_classes); `guarded`: the
    lines of statements moved out of host `if`s (guarded_graph)."""
    meta = _Meta()
    meta.guarded = guarded or frozenset()
    with meta.resolve(wrapper):
        meta.names = shared_names(wrapper, catalog_module.load())
        try:
            try:
                new = ProgramRewrite(module, meta, plan, renames).run()
            except model_classes.ClassFound as found:   # read again, `self.<attr>` as names in `__init__`
                if meta.guarded:   # (its lines are the lowered module's: not followed through the desugaring)
                    raise guarded_graph.with_class(found.cls)
                desugared, plan = model_classes.desugar(module, found.cls, found.decisions, found.unbuilt)
                return _restructure(desugared, AnalysisWrapper(desugared), plan)
        except Refusal as refusal:
            refused = getattr(refusal, "all", [refusal])
            return Restructured(None, [(*position(meta, r.node), r.code, r.message, "manual") for r in refused]
                                + _legacy(meta), legacy=tuple(dict.fromkeys(getattr(meta, "legacy", ()))),
                                reshape=frozenset(position(meta, r.node)[0] for r in refused
                                                  if r.reason in statement_forms.REASONS),
                                first_reason=refused[0].reason)
        except Exception as exc:  # noqa: BLE001 - a bug here must never cost the user's file
            return Restructured(None, [diagnostic(1, 1, "internal_error", error=f"{type(exc).__name__}: {exc}")])
    if new is None:   # (no session to start from: ProgramRewrite.run)
        return Restructured(None, no_session=True)
    return Restructured(new, list(getattr(meta, "notes", ())) + _legacy(meta),   # info notes of the model (TFG206)
                        legacy=tuple(dict.fromkeys(getattr(meta, "legacy", ()))))


def _legacy(meta) -> list[Diagnostic]:
    """The legacy training bugs found in the graphs read (tf1gradfix/legacy), once each."""
    return [found.as_diagnostic() for found in dict.fromkeys(getattr(meta, "legacy", ()))]
