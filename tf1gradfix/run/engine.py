"""One file through the pipeline: decode -> parse -> detect -> fix -> re-parse.

This is what a worker process runs, so it takes and returns small picklable
values. It never imports TensorFlow and never executes the file. Its steps,
each a module of its own: Python's judgement of the file (judgement.py), the
whole-program restructuring (restructuring.py), the findings' labels
(labels.py) and the check of what a rewrite wrote (rewrite_check.py).
"""

from __future__ import annotations

import re

from tf1gradfix.detect.keywords import SAFE
from tf1gradfix.emit.keyword_renames import EVERY, renamed as keyword_renamed
from tf1gradfix.run.keyword_findings import CODE as KEYWORD_CODE, keyword_findings
from tf1gradfix.run.argument_findings import CODE as ARGUMENT_CODE, argument_findings, tf2_lacks_refusal
from tf1gradfix.records import field, record, replace
from tf1gradfix.run import collector
from tf1gradfix.run.findings import CodeFilter, FileError, Finding
from tf1gradfix.run.judgement import _python_judgement, _python_syntax_error, _syntax_error
from tf1gradfix.run.labels import _breaks_tf1, _kept_note, _label, _tf1_form, _unplanned, _unplanned_note, removed_names
from tf1gradfix.run.restructuring import _restructured
from tf1gradfix.run.rewrite_check import _lines_of, _names_tf2_lacks, _unparsable, as_written
from tf1gradfix.run.source_io import decode_error

# A file that never mentions TensorFlow cannot hold a TF1 construct: it is
# not parsed at all, which keeps pre-commit runs over big trees fast.
_MARKER = b"tensorflow"


@record
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    new_source: bytes | None = None  # set only when the fixes changed the file


def process_source(display: str, data: bytes, codes: CodeFilter, fix: bool = True,
                   restructure: bool = True, check: bool = False) -> FileResult:
    """`restructure=False`: the safe fixes only (what a rewrite writes without proof).
    `check`: rule findings only, read with Python's parser (LibCST is never
    imported); whether a session program can be restructured is left to
    `rewrite`, and its findings carry no fixed mark (None)."""
    with collector.paused():
        return _process_source(display, data, codes, fix, restructure, check)


def _process_source(display: str, data: bytes, codes: CodeFilter, fix: bool, restructure: bool,
                    check: bool) -> FileResult:
    result = FileResult(display)
    error = decode_error(display, data)
    if error is not None:
        result.error = error
        return result
    if _MARKER not in data or skipped(data):
        return result
    from tf1gradfix.detect import prefilter

    if not prefilter.load().worth_parsing(data):
        # It mentions TensorFlow but spells no TF1 construct (TF2 code): LibCST
        # is not needed, only Python's compiler, to report a broken file.
        result.error = _python_syntax_error(display, data)
        if result.error is None:
            result.findings = removed_names(display, data, codes, set(), fixed=False)
        return result
    if b"\r" in data and b"\n" not in data:
        # Old Mac line endings: LibCST loses the last one, so work on LF and
        # turn every line ending back (no LF existed, so none is ambiguous).
        result = _process_tensorflow_source(result, display, data.replace(b"\r", b"\n"), codes, fix, restructure, check)
        if result.new_source is not None:
            result.new_source = result.new_source.replace(b"\n", b"\r")
        return result
    return _process_tensorflow_source(result, display, data, codes, fix, restructure, check)


_SKIP_FILE = re.compile(rb"^[ \t]*#[ \t]*tf1gradfix:[ \t]*skip-file[ \t]*$", re.M)


def skipped(data: bytes) -> bool:
    """The file says `# tf1gradfix: skip-file` on a line of its own: neither checked nor
    rewritten (isort's `skip_file`, ruff's file-wide `noqa`)."""
    if b"skip-file" not in data:
        return False
    return _SKIP_FILE.search(data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")) is not None   # (any line ending)


def may_parse(path: str) -> bool:
    """Whether the file at `path` may be parsed with LibCST (unreadable files are not).

    Only the identifiers are read (a fraction of a millisecond): a file whose
    imports rule everything out is still counted here, and skipped later.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    from tf1gradfix.detect import prefilter

    return _MARKER in data and not skipped(data) and prefilter.load().possible(data).anything


def preload(rewrite: bool = True) -> None:
    """Import the detection (and, for `rewrite`, LibCST and the rewrite) and read the rule tables now.

    A parent that forks its workers afterwards pays for this once, instead of
    once per worker.
    """
    from tf1gradfix.rules import catalog
    from tf1gradfix.detect import ast_rules  # noqa: F401

    if not rewrite:
        catalog.load()
        return
    import libcst  # noqa: F401

    from tf1gradfix.detect import detector as detect
    from tf1gradfix.emit import renames as fix_renames, restructure  # noqa: F401
    from tf1gradfix.cst.syntax import graph_ops

    catalog.load()
    graph_ops()


def _process_tensorflow_source(result: FileResult, display: str, data: bytes, codes: CodeFilter, fix: bool,
                               restructure: bool = True, check: bool = False) -> FileResult:
    result.error = _python_judgement(display, data)
    if result.error is not None:
        return result
    done = _without_libcst(result, display, data, codes, fix, restructure, check)
    if done is not None:
        return done
    # LibCST costs a quarter second to import: only files that mention
    # TensorFlow pay for it.
    from tf1gradfix.cst.walk import read_only_visits

    # Every read-only LibCST walk of the rewrite (scope analysis, detection,
    # the restructuring's visitors) then runs without rebuilding the tree.
    try:
        with read_only_visits():
            return _analyzed(result, display, data, codes, fix, restructure)
    except RecursionError:  # nesting Python's tree does not show (a long chain of implicitly joined strings)
        return FileResult(display, error=FileError(
            display, "too deeply nested for the rewrite (Python's recursion limit reached); file left unchanged"))


def _without_libcst(result: FileResult, display: str, data: bytes, codes: CodeFilter, fix: bool,
                    restructure: bool, check: bool) -> FileResult | None:
    """The file's result from Python's syntax tree alone, or None when LibCST must read it.

    Detection runs on `ast` (detect/ast_rules). A module that opens no session
    gives the restructuring nothing to do: its findings are the rule hits and
    its safe renames byte edits (emit/token_renames). A session program goes
    to LibCST for the restructuring; without it (`restructure` off) it is one
    more such module; `check` reports its hits unmarked.
    """
    from tf1gradfix.detect import ast_rules
    from tf1gradfix.detect.prefilter import python_tree
    from tf1gradfix.emit.handled import HANDLED
    from tf1gradfix.rules import catalog as catalog_module
    from tf1gradfix.run.findings import is_suppressed, suppressions

    tree = python_tree(data)   # (read already: _python_judgement)
    if tree is None:
        return None
    text = data
    if data.startswith(b"\xef\xbb\xbf") or _declares_encoding(data):
        if not check:
            return None   # (byte edits need the offsets `ast` gives: those of UTF-8 text)
        text = _as_utf8(data)
    hits, session, others = ast_rules.analyze_sessions(tree, text, catalog_module.load())
    restructurable = session and restructure and any(codes.wants(code) for code in HANDLED)
    if restructurable and not check:
        return None
    fix = fix and not restructurable
    decided = not restructurable   # (`check` of a session program: `rewrite` decides, fixed stays None)
    silenced = suppressions(data.decode("utf-8", "replace")) if b"tf1gradfix" in data else {}
    plans = []
    for hit in hits:
        code = hit.rule.code
        if not codes.wants(code) or is_suppressed(hit.line, code, silenced):
            continue
        breaks = _breaks_tf1(hit, catalog_module.load())
        replacement = _tf1_form(hit) if breaks and decided else hit.replacement
        fixable = fix and replacement is not None and hit.rule.safety == "safe"
        if fixable:
            plans.append((hit.node, replacement))
        unplanned = decided and _unplanned(hit)
        safety = "manual" if unplanned else hit.rule.safety   # (a file that stays TF1 gets its TF1 form)
        result.findings.append(Finding(display, hit.line, hit.col, code,
                                       _unplanned_note(hit.message) if unplanned
                                       else _kept_note(hit.message, _tf1_form(hit) if breaks else None),
                                       _label(safety, not decided), fixable if decided else None))
    result.findings += removed_names(display, data, codes, {(h.line, h.col) for h in hits},
                                     fixed=False if decided else None)
    result.findings += keyword_findings(display, text, tree if text is data else None, codes, silenced,
                                        False if decided else None, fix)
    tf1 = bool(result.findings)   # (the positional arguments of a file with no other TF1 finding are TF2's)
    result.findings += argument_findings(display, text, tree if text is data else None, codes, silenced,
                                         False if decided else None, fix, tf1)
    if check and session:   # (the legacy training bugs: read off the program model, only when selected)
        result.findings += _legacy(display, data, codes, silenced)
    if not session and restructure:   # (its safe fixes are written all the same: `fix` stays)
        result.findings += _sessionless(display, tree, text, hits, others, codes, silenced)
    result.findings.sort(key=lambda f: (f.line, f.col, f.code))
    if plans:
        from tf1gradfix.emit.token_renames import renamed

        new_source, exact = renamed(text, plans)
        if not exact and not check:
            result.findings = []
            return None   # (a bracket in a renamed chain: LibCST prints it its way)
        edited = {line for node, _ in plans for line in range(node.lineno, node.end_lineno + 1)}
        new_source, changed = as_written(text, new_source, edited)
        problem = _unparsable(new_source) if changed is None else None
        if changed is not None:   # a line no rename touched came out different: never write it
            result.error = FileError(display, f"internal error: the rewrite changed line {changed}, which it did not "
                                     "edit; file left unchanged", changed)
            result.findings = _unfixed(result.findings)
        elif problem is not None:
            result.error = FileError(display, f"internal error: rewritten code does not parse ({problem}); file left unchanged")
            result.findings = _unfixed(result.findings)
        elif new_source != text:
            result.new_source = new_source   # (`check` only counts it as a change)
    if fix and result.error is None and any(f.code in (KEYWORD_CODE, ARGUMENT_CODE) and f.fixed
                                            for f in result.findings):
        base = result.new_source if result.new_source is not None else text
        new_source = keyword_renamed(base, tf1=tf1)
        if new_source != base and _unparsable(new_source) is None:
            result.new_source = new_source
    return result


def _legacy(display: str, data: bytes, codes: CodeFilter, silenced) -> list[Finding]:
    """`check --select TFG8...`: the legacy training bugs (tf1gradfix/legacy), which need
    the program model; they are read only where the selection names them itself (`TFG8`,
    `TFG802`), so a plain `check` never imports LibCST."""
    from tf1gradfix.rules import catalog
    from tf1gradfix.run.findings import is_suppressed

    if not any(len(s) >= 4 and rule.code.startswith(s) and codes.wants(rule.code)
               for rule in catalog.load().rules if rule.reported_by == "legacy" for s in codes.select):
        return []
    from tf1gradfix.legacy.reading import read as read_legacy

    return [Finding(display, f.line, f.col, f.code, f.message, "manual", False) for f in read_legacy(data, display)
            if codes.wants(f.code) and not is_suppressed(f.line, f.code, silenced)]


def _sessionless_of(display: str, data: bytes, codes: CodeFilter, silenced, found_none: bool) -> list[Finding]:
    """`_sessionless` of a file read by LibCST (a BOM or an encoding declaration); `found_none`:
    the restructuring found no session to start from (Restructured.no_session), else it did
    not run (no code it fixes is selected)."""
    from tf1gradfix.detect import ast_rules
    from tf1gradfix.detect.prefilter import python_tree
    from tf1gradfix.model.refusals import diagnostic
    from tf1gradfix.rules import catalog

    tree = python_tree(data)
    if tree is None:
        return []
    text = _as_utf8(data)
    hits, session, others = ast_rules.analyze_sessions(tree, text, catalog.load())
    if session and found_none:   # (Python's tree shows a session call LibCST's did not: a bug of ours, said as one)
        reasons = [diagnostic(1, 1, "internal_error", error="the restructuring found none of the session calls")]
        return _wanted(display, reasons, codes, silenced)
    if session:
        return []
    return _sessionless(display, tree, text, hits, others, codes, silenced)


def _sessionless(display: str, tree, text: bytes, hits, others, codes: CodeFilter, silenced) -> list[Finding]:
    """Why a module that opens no session is not restructured (run/sessionless.py): one
    reason at least where it holds graph code (a construct only a restructuring fixes).
    A model module is restructured with the script that imports it (project.py). A
    construct kept on purpose (a suppression comment names its code) asks for no reason."""
    from tf1gradfix.detect.ast_rules import _Source
    from tf1gradfix.run import sessionless
    from tf1gradfix.run.findings import is_suppressed

    hits = [h for h in hits if not is_suppressed(h.line, h.rule.code, silenced)]
    return _wanted(display, sessionless.reasons(tree, hits, others, _Source(text).col), codes, silenced)


def _wanted(display: str, reasons, codes: CodeFilter, silenced) -> list[Finding]:
    """The findings of refusal diagnostics the selection and the comments let through."""
    from tf1gradfix.run.findings import is_suppressed

    return [Finding(display, line, col, code, message, safety, False) for line, col, code, message, safety in reasons
            if codes.wants(code) and not is_suppressed(line, code, silenced)]


def _as_utf8(data: bytes) -> bytes:
    """`data` as UTF-8 without a BOM, the text whose byte offsets `ast` reports."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding).encode("utf-8").removeprefix(b"\xef\xbb\xbf")
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data


_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.M)


def _declares_encoding(data: bytes) -> bool:
    """Whether one of the first two lines declares a source encoding (PEP 263)."""
    head = b"\n".join(data.splitlines()[:2])
    return _CODING.search(head) is not None


def _analyzed(result: FileResult, display: str, data: bytes, codes: CodeFilter, fix: bool,
              restructure: bool = True) -> FileResult:
    import libcst as cst

    from tf1gradfix.rules import catalog as catalog_module
    from tf1gradfix.cst.metadata import AnalysisWrapper
    from tf1gradfix.detect.detector import detect
    from tf1gradfix.run.findings import is_suppressed, suppressions
    from tf1gradfix.emit.renames import renamed_source
    from tf1gradfix.emit.handled import FIXED_WHEN_RESTRUCTURED

    try:
        module = cst.parse_module(data)
    except cst.ParserSyntaxError as exc:
        result.error = _syntax_error(display, data, exc)
        return result
    except (RecursionError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        result.error = FileError(display, f"cannot parse: {exc}")
        return result

    catalog = catalog_module.load()
    # (source encodings are ASCII-compatible: no marker in the bytes, none in the text)
    silenced = suppressions(module.code) if b"tf1gradfix" in data else {}
    # Whole-program rewrite of a Session program first; findings stay those of
    # the original file (what the user wrote), marked fixed when it succeeded.
    original = AnalysisWrapper(module)
    found = detect(original, catalog)
    # The safe renames go into the code the restructuring copies and keeps, as it is printed.
    renames = {hit.node: hit.replacement for hit in found if hit.replacement is not None and hit.rule.safety == "safe"}
    shaped, refused = (_restructured(original, display, codes, result, silenced, catalog, renames, found)
                       if restructure else (None, False))
    fix = fix and not refused  # a refused program is left byte-for-byte intact
    if restructure and shaped is None and not refused:   # (no session: the file says why, as above; safe fixes stay)
        result.findings += _sessionless_of(display, data, codes, silenced, found_none=refused is None)
    parsed = data  # the bytes `module` was parsed from
    hits = found
    if shaped is not None:
        module, hits, parsed = shaped
        for hit in found:
            if codes.wants(hit.rule.code) and not is_suppressed(hit.line, hit.rule.code, silenced):
                handled = hit.rule.code in FIXED_WHEN_RESTRUCTURED or hit.rule.safety == "safe"
                result.findings.append(Finding(display, hit.line, hit.col, hit.rule.code, hit.message,
                                               _label(hit.rule.safety, handled), fix and handled))
    replacements: dict[cst.CSTNode, str] = {}
    for hit in hits:
        code = hit.rule.code
        if shaped is None and (not codes.wants(code) or is_suppressed(hit.line, code, silenced)):
            continue  # (a restructured file gets every rename: it must run on TF2)
        breaks = shaped is None and _breaks_tf1(hit, catalog)
        replacement = _tf1_form(hit) if breaks else hit.replacement
        fixable = fix and replacement is not None and hit.rule.safety == "safe"
        if fixable:
            replacements[hit.node] = replacement
        if shaped is None:
            unplanned = _unplanned(hit)
            result.findings.append(Finding(display, hit.line, hit.col, code,
                                           _unplanned_note(hit.message) if unplanned
                                           else _kept_note(hit.message, replacement if breaks else None),
                                           _label("manual" if unplanned else hit.rule.safety, False), fixable))
    # (every rule hit counts as reported there, a silenced one too)
    result.findings += removed_names(display, data, codes, {(h.line, h.col) for h in found},
                                     fixed=fix and shaped is not None)
    result.findings += keyword_findings(display, data, None, codes, silenced, shaped is not None, fix)
    tf1 = bool(result.findings) or shaped is not None
    result.findings += argument_findings(display, data, None, codes, silenced, shaped is not None, fix, tf1)
    keywords_fixed = any(f.code in (KEYWORD_CODE, ARGUMENT_CODE) and f.fixed for f in result.findings)
    result.findings.sort(key=lambda f: (f.line, f.col, f.code))

    if replacements or (shaped is not None and fix) or keywords_fixed:
        # (a module no rename touches prints as the bytes it was parsed from: LibCST round-trips exactly)
        new_source = renamed_source(module, replacements) if replacements else parsed
        edited = None if shaped is not None else _lines_of(h for h in hits if h.node in replacements)
        new_source, changed = as_written(data, new_source, edited)
        if changed is not None:
            # A line no rename touched came out different: never write it.
            result.error = FileError(display, f"internal error: the rewrite changed line {changed}, which it did not "
                                     "edit; file left unchanged", changed)
            result.findings = _unfixed(result.findings)
            return result
        if shaped is not None or keywords_fixed:   # (a restructured program must run on TF2: every keyword)
            unrenamed = new_source
            new_source = keyword_renamed(new_source, EVERY if shaped is not None else frozenset({SAFE}), tf1)
            from tf1gradfix.cst.layout import refit_source

            new_source = refit_source(unrenamed, new_source)   # (black's layout of a call a keyword shortened)
        problem = _unparsable(new_source)
        gone = (_names_tf2_lacks(new_source, data) or tf2_lacks_refusal(new_source, data)
                if problem is None and shaped is not None else None)
        if gone is not None:
            # A restructured program must run on TF2: never write a name it lacks.
            line, col, code, message, safety = gone
            result.findings = _unfixed(result.findings)
            if codes.wants(code):
                result.findings.append(Finding(display, line, col, code, message, safety, False))
                result.findings.sort(key=lambda f: (f.line, f.col, f.code))
        elif problem is not None:
            # Never write a file we cannot read back: report and keep the original.
            result.error = FileError(display, f"internal error: rewritten code does not parse ({problem}); file left unchanged")
            result.findings = _unfixed(result.findings)
        elif new_source != data:
            result.new_source = new_source
    return result


def _unfixed(findings: list[Finding]) -> list[Finding]:
    """The findings of a file that is left unchanged after all: none of them was fixed."""
    return [replace(f, fixed=False) if f.fixed else f for f in findings]

