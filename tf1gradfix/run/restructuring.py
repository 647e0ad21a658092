"""The whole-program restructuring as a step of the engine (engine.py): run it, read
what it wrote, and refuse a rewrite that would leave a TF1 construct or drop a fix
the user withheld.

The restructured module is analyzed again only where a rule could still fire on
its text (the prefilter says), for what is left and for the renames it must get.
"""

from __future__ import annotations

from tf1gradfix.run.findings import Finding


def _restructured(wrapper, display, codes, result, silenced, catalog, renames, found=()):
    """((module, detections, source) of the restructured module, or None; refused?), where
    refused is None for a module that opens no session the restructuring starts from.

    `renames`: rename plans of chains of the original module (detect), applied
    wherever the rewrite prints those chains. Whatever is left to rename (code
    printed otherwise, a chain the rewrite rebuilt) is found by analyzing the
    rewritten module again, as is anything else left.

    A refusal's manual diagnostics go to the findings. So does a rewrite that
    would still hold a TF1 construct (a finding without a safe fix): it is
    dropped, and the file is left intact.
    """
    import libcst as cst

    from tf1gradfix.detect import prefilter
    from tf1gradfix.cst import printing
    from tf1gradfix.cst.metadata import AnalysisWrapper
    from tf1gradfix.detect.detector import detect
    from tf1gradfix.run.findings import is_suppressed, suppressions
    from tf1gradfix.emit.renames import renamed_source
    from tf1gradfix.constructs import flags
    from tf1gradfix.emit.restructure import HANDLED, restructure
    from tf1gradfix.model.refusals import diagnostic

    if not any(codes.wants(code) for code in HANDLED):  # one fix of them all: it runs when one is selected
        return None, False
    withheld = _withheld(found, codes, silenced)
    if withheld:   # (always reported: a selection or comment must not switch the rewrite off unsaid)
        result.findings += [Finding(display, *refusal, False) for refusal in withheld]
        return None, True
    shaped = restructure(wrapper.module, display, wrapper, renames)
    if shaped.no_session:
        return None, None   # (nothing to start from: the caller says why, run/sessionless.py)
    diagnostics = list(shaped.diagnostics)
    new = None
    if shaped.new_module is not None:
        source = renamed_source(shaped.new_module, renames) if renames else printing.source_bytes(shaped.new_module)
        source, refusal = flags.absl_form(source, wrapper.module.code.encode(wrapper.module.encoding))
        if refusal is not None:
            diagnostics.append(refusal)
        elif not prefilter.load().possible(source, resolve=True).codes:
            # No rule can fire on the rewritten text: nothing is left and nothing
            # needs a rename, so it is not parsed and analyzed again.
            new = (shaped.new_module, [], source)
        else:
            # Parsed again: the rewritten tree may share nodes, which metadata cannot tell apart.
            new_wrapper = AnalysisWrapper(cst.parse_module(source))
            # Only what is left, and the renames. Lines are needed only where the rewrite
            # itself kept a construct on purpose, with a suppression comment saying why.
            kept = suppressions(source.decode(shaped.new_module.encoding)) if b"tf1gradfix:" in source else {}
            hits = detect(new_wrapper, catalog, positions=bool(kept))
            # (a name also bound to something else, `tf = tf.compat.v1`, takes no rename: it is left too)
            left = [h for h in hits if (h.rule.safety != "safe" or h.ambiguous)
                    and not is_suppressed(h.line, h.rule.code, kept)]
            if left:
                diagnostics.append(diagnostic(1, 1, "rewrite_leaves_construct", code=left[0].rule.code,
                                              detail=left[0].message.split(';')[0]))
            else:
                new = (new_wrapper.module, hits, source)
    for line, col, code, message, safety in diagnostics:
        if codes.wants(code) and not is_suppressed(line, code, silenced):
            # a successful rewrite's own notes (arguments dropped, optimizer kept) describe what it did
            done = new is not None and safety != "manual"
            result.findings.append(Finding(display, line, col, code, message, safety, done))
    return new, new is None and bool(diagnostics)


def _withheld(found, codes, silenced) -> list[tuple]:
    """Refusals of a restructuring that would make a fix the user withheld: a finding it
    fixes on a line whose `# tf1gradfix: ignore` names its code, or a safe fix (a rename)
    whose code is deselected. A restructured program must run on TF2, so it cannot leave
    either out; the file is left intact instead."""
    from tf1gradfix.emit.handled import FIXED_WHEN_RESTRUCTURED
    from tf1gradfix.model.refusals import diagnostic
    from tf1gradfix.run.findings import is_suppressed

    out = []
    for hit in found:
        code = hit.rule.code
        if code not in FIXED_WHEN_RESTRUCTURED and hit.replacement is None:
            continue   # (not changed by the restructuring)
        if is_suppressed(hit.line, code, silenced):
            how = "a `# tf1gradfix: ignore` comment protects"
        elif code not in FIXED_WHEN_RESTRUCTURED and not codes.wants(code):
            how = "is deselected (--select, --ignore or the settings)"
        else:
            continue
        out.append(diagnostic(hit.line, hit.col, "fix_withheld", code=code, how=how))
    return out
