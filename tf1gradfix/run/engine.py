"""One file through the pipeline: decode -> parse -> detect -> fix -> re-parse.

This is what a worker process runs, so it takes and returns small picklable
values. It never imports TensorFlow and never executes the file.
"""

from __future__ import annotations

import re

from tf1gradfix.detect.keywords import SAFE
from tf1gradfix.emit.keyword_renames import EVERY, renamed as keyword_renamed
from tf1gradfix.run.keyword_findings import CODE as KEYWORD_CODE, keyword_findings
from tf1gradfix.run.argument_findings import CODE as ARGUMENT_CODE, argument_findings, tf2_lacks_refusal
from tf1gradfix.records import field, record, replace
from tf1gradfix.run.findings import CodeFilter, FileError, Finding
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


def _syntax_error(display: str, data: bytes, exc) -> FileError:
    """Python's own compiler names the offending line more exactly than LibCST's parser."""
    return (_python_syntax_error(display, data)
            or FileError(display, f"syntax error: {exc.message}", exc.editor_line, exc.editor_column + 1))


def _python_syntax_error(display: str, data: bytes) -> FileError | None:
    """The syntax error Python's compiler finds in `data`, with its line, if any."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, display, "exec", dont_inherit=True)
    except SyntaxError as py_exc:
        if py_exc.lineno:
            return FileError(display, f"syntax error: {py_exc.msg}", py_exc.lineno, py_exc.offset)
    except (ValueError, RecursionError, MemoryError):
        pass
    return None


# Deepest syntax tree the rewrite takes (Python's own limit on nested brackets).
# LibCST's printer and visitors recurse once or more per level and exhaust
# Python's recursion limit at about 250 levels; its native parser crashes the
# process on very deep input and takes minutes on a 30,000-term sum.
MAX_DEPTH = 200


def _python_judgement(display: str, data: bytes) -> FileError | None:
    """Why the file must not reach LibCST's parser: Python rejects it, or it is too deep.

    Python's compiler judges first, so a file LibCST would crash or stall on
    is reported, with its line, instead of taking the run down.
    """
    from tf1gradfix.detect.prefilter import python_tree

    tree = python_tree(data)  # (usually read already by the prefilter)
    if tree is None:
        return _python_syntax_error(display, data) or FileError(
            display, "too deeply nested for Python's parser; file left unchanged")
    depth, line = nesting_depth(tree)
    if depth > MAX_DEPTH:
        return FileError(display, f"too deeply nested for the rewrite ({depth} levels, limit {MAX_DEPTH}); "
                         "file left unchanged", line)
    return None


def nesting_depth(tree) -> tuple[int, int | None]:
    """(depth of the deepest node of a Python syntax tree, its line), without recursion.

    `a and b and c` is one node for Python but a nest of two for LibCST, so a
    boolean operation counts one level per operator.
    """
    import ast

    deepest, line = 0, None
    stack = [(tree, 1, tree)]
    pop, push, children, bool_op = stack.pop, stack.append, ast.iter_child_nodes, ast.BoolOp
    while stack:
        node, depth, parent = pop()
        if depth > deepest:  # (a Load or Store marker has no line: its parent's)
            deepest, line = depth, getattr(node, "lineno", None) or getattr(parent, "lineno", None)
        for child in children(node):
            push((child, depth + (len(child.values) - 1 if isinstance(child, bool_op) else 1), node))
    return deepest, line


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
            new_source = keyword_renamed(new_source, EVERY if shaped is not None else frozenset({SAFE}), tf1)
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


# A line with its own ending: bytes split only at real line endings (\n, \r\n, \r),
# never at a form feed or U+2028 inside a string as str.splitlines would.
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_SHAPE = re.compile(rb"([ \t\x0c]*)(.*?)(\r\n|\r|\n|)\Z", re.S)


def split_lines(data: bytes) -> list[bytes]:
    return _LINE.findall(data)


def as_written(data: bytes, new: bytes, edited: set[int] | None) -> tuple[bytes, int | None]:
    """`new`, with what LibCST loses put back from `data`; and the first line the check below finds changed.

    LibCST drops a form feed that starts a line and, in a file mixing lone CR
    and LF, the last line ending. Lines the rewrite kept get theirs back:
    for renames, line by line (a rename never adds or removes a line), where
    every line outside `edited` (the renamed chains' lines) must then equal
    the input, byte for byte; for a restructuring, the lines its output
    shares with the input apart from form feeds and line endings.
    """
    if data == new:
        return new, None
    old_lines, new_lines = split_lines(data), split_lines(new)
    out = list(new_lines)
    if edited is not None:
        if len(old_lines) != len(new_lines):
            return new, 1 + next((i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b), len(new_lines))
        for index, (old, line) in enumerate(zip(old_lines, new_lines)):
            if old != line:
                out[index] = _rejoined(old, line)
                if out[index] != old and index + 1 not in edited:
                    return new, index + 1
        return b"".join(out), None
    def bare(line: bytes) -> bytes:
        return line.rstrip(b"\r\n").replace(b"\x0c", b"")

    # Matching the lines costs time quadratic in the lines repeated (blank lines,
    # `with tf.Session() as sess:`...): it runs only when what it could put back
    # differs from the output, i.e. some line of the output equals, up to form
    # feeds and ending, an input line written otherwise (None: written in two ways).
    forms: dict[bytes, bytes | None] = {}
    for line in old_lines:
        key = bare(line)
        forms[key] = line if forms.get(key, line) == line else None
    if all(forms.get(bare(line), line) == line for line in new_lines):
        return new, None
    import difflib

    matcher = difflib.SequenceMatcher(None, [bare(line) for line in old_lines], [bare(line) for line in new_lines], autojunk=False)
    for start, new_start, size in matcher.get_matching_blocks():
        out[new_start:new_start + size] = old_lines[start:start + size]
    return b"".join(out), None


def _rejoined(old: bytes, new: bytes) -> bytes:
    """`new`'s text with `old`'s line ending, and `old`'s indentation where it differs only by form feeds."""
    old_indent, _, old_end = _SHAPE.match(old).groups()
    indent, body, _ = _SHAPE.match(new).groups()
    if old_indent.replace(b"\x0c", b"") == indent.replace(b"\x0c", b""):
        indent = old_indent
    return indent + body + old_end


def _lines_of(hits) -> set[int]:
    """Lines the renamed chains of `hits` span."""
    import libcst as cst

    lines = set()
    for hit in hits:
        span = len(split_lines(cst.Module([]).code_for_node(hit.node).encode("utf-8")))
        lines.update(range(hit.line, hit.line + max(span, 1)))
    return lines


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


REMOVED = "TFG402"


def removed_names(display: str, data: bytes, codes: CodeFilter, taken: set[tuple[int, int]],
                  fixed: bool) -> list[Finding]:
    """TFG402 findings: `tf.*` names TF2 lacks that no other rule reports at that place (`taken`).

    `fixed`: the file was restructured, and a restructured program spells no
    such name (`_names_tf2_lacks` refuses it otherwise).
    """
    if not codes.wants(REMOVED):
        return []
    from tf1gradfix.detect import api_surface
    from tf1gradfix.run.findings import is_suppressed, suppressions
    from tf1gradfix.detect.prefilter import python_tree

    tree = python_tree(data)   # (read already: the engine's syntax check)
    gone = api_surface.missing(tree) if tree is not None else []
    if not gone:
        return []
    silenced = suppressions(data.decode("utf-8", "replace")) if b"tf1gradfix" in data else {}
    from tf1gradfix.rules import catalog

    rule = catalog.load().by_code[REMOVED]
    out = []
    for m in gone:
        if (m.line, m.col) in taken or is_suppressed(m.line, REMOVED, silenced):
            continue
        message = rule.message.format(symbol=f"tf.{m.name}", advice=api_surface.advice(m.name))
        out.append(Finding(display, m.line, m.col, REMOVED, message, _label(rule.safety, fixed is not False), fixed))
    return out


def _label(safety: str, restructured: bool) -> str:
    """A finding's fix label, the rule's for this file: with a restructuring of the file
    (or `check`'s open question of one), a manual rule's finding it removes (a tf.contrib
    piece it maps, a TF1-only name it no longer spells) is fixable with proof; without one
    (no session, or a refused program), a finding only a restructuring fixes is manual."""
    if restructured:
        return "proven" if safety == "manual" else safety
    return "manual" if safety == "proven" else safety


def _breaks_tf1(hit, catalog) -> bool:
    """A rename whose TF2 name a file that stays TF1 cannot take (renames.toml: restructured_only)."""
    return hit.replacement is not None and f"tensorflow.{'.'.join(hit.replacement[1])}" in catalog.restructured_only


def _unplanned(hit) -> bool:
    """A safe rule's hit the rename cannot write (the name reached through a `tf.compat.v1`
    alias or a bare imported name, whose import would change too, or one bound to something
    else as well): it is no safe fix of this file, so it is not labelled one."""
    return hit.rule.safety == "safe" and hit.replacement is None


def _unplanned_note(message: str) -> str:
    return message + (" (not written here: the name is reached through a `tf.compat.v1` alias or an imported name, "
                      "which keeps it; rename it when the import moves to TF2)")


def _tf1_form(hit) -> tuple[int, list[str]] | None:
    """The rename a file that stays TF1 takes instead: TF1's own function under
    `tf.compat.v1` (`tf.set_random_seed` -> `tf.compat.v1.set_random_seed`), which
    both TensorFlows have, as TensorFlow's own upgrade table writes it."""
    if hit.replacement is None:
        return None
    old_parts, node, names = hit.replacement[0], hit.node, []
    for _ in range(old_parts):   # (an `ast` or a LibCST attribute chain: the names being replaced)
        names.append(node.attr if isinstance(node.attr, str) else node.attr.value)
        node = node.value
    return old_parts, ["compat", "v1", *reversed(names)]


def _kept_note(message: str, tf1_form: tuple[int, list[str]] | None) -> str:
    if tf1_form is None:
        return message
    return message + (f" (in a file that stays TF1: `tf.{'.'.join(tf1_form[1])}`; tf.compat.v1 lacks the TF2 name "
                      "or has another function under it)")


def _unfixed(findings: list[Finding]) -> list[Finding]:
    """The findings of a file that is left unchanged after all: none of them was fixed."""
    return [replace(f, fixed=False) if f.fixed else f for f in findings]


def _names_tf2_lacks(source: bytes, original: bytes):
    """The refusal of a rewrite that would spell a `tf.*` name TF2 does not have, or None.

    Such a program fails with an AttributeError the first time that line runs;
    the line reported is where the original spells the name (or 1). A line the
    rewrite kept on purpose carries a suppression comment and is not judged.
    """
    from tf1gradfix.detect import api_surface
    from tf1gradfix.run.findings import suppressions
    from tf1gradfix.detect.prefilter import python_tree
    from tf1gradfix.model.refusals import diagnostic

    tree = python_tree(source)   # (read already: _unparsable compiled it)
    gone = api_surface.missing(tree) if tree is not None else []
    if gone and b"tf1gradfix:" in source:
        kept = suppressions(source.decode("utf-8", "replace"))
        gone = [m for m in gone if m.line not in kept]
    if not gone:
        return None
    name = gone[0].name
    tree = python_tree(original)
    where = [m for m in api_surface.missing(tree) if m.name == name] if tree is not None else []
    line, col = (where[0].line, where[0].col) if where else (1, 1)
    return diagnostic(line, col, "rewrite_writes_removed_name", name=name)


def _unparsable(source: bytes) -> str | None:
    """Why Python cannot compile `source`, if it cannot.

    The renames put one dotted name in place of another in a tree LibCST
    printed; Python's own compiler is the reader that matters to the user.
    """
    import warnings

    from tf1gradfix.detect.prefilter import python_tree

    tree = python_tree(source)   # (parsed already when the prefilter read the rewrite's imports)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the user's own warnings are not ours to print
            compile(source if tree is None else tree, "<rewritten>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None
