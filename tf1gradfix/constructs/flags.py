"""Command-line flags: `tf.app.flags` / `tf.flags` and `tf.app.run` become `absl.flags`
and `absl.app.run`, in a program the rewrite restructures (TF2 has neither name).

TF1's flags are absl's underneath (tensorflow/python/platform/flags.py, app.py): the
same flag names, types and parsing. Three differences are kept explicitly:
- `tf.app.run()` parses with `known_only=True` (an unknown flag reaches `main`'s argv
  instead of stopping the program) and calls `__main__.main` when given no function:
  `absl.app.run(main, flags_parser=...)` says both.
- TF1's `FLAGS` parses `sys.argv` itself the first time a value is read unparsed (a
  script reading `FLAGS.epochs` at module level, with no `app.run`); absl's raises.
  The parse is written where the first such read is, once every flag is defined.
- `DEFINE_*` took the old keyword names `flag_name`, `default_value`, `docstring`;
  they become `name`, `default`, `help`.
Anything else of `tf.app` is left, and the rewrite is refused for it (TFG905).
Runs on the rewritten text; Python's parser decides, LibCST edits.
"""

from __future__ import annotations

import ast

import libcst as cst

from tf1gradfix.detect.ast_names import dotted
from tf1gradfix.detect.names import dotted as cst_dotted
from tf1gradfix.model.refusals import diagnostic
from tf1gradfix.cst.layout import fit, refit_source

_OLD_KEYWORDS = {"flag_name": "name", "default_value": "default", "docstring": "help"}
_DEFINES = ("DEFINE_string", "DEFINE_boolean", "DEFINE_bool", "DEFINE_float", "DEFINE_integer")
_PARSER = "lambda argv: absl.flags.FLAGS(argv, known_only=True)"


class _Reading:
    """What the program does with flags (Python's parser only)."""

    def __init__(self, tree: ast.Module, aliases: set[str]):
        self.modules = {f"{a}.app.flags" for a in aliases} | {f"{a}.flags" for a in aliases}
        self.runs = {f"{a}.app.run" for a in aliases}
        self.flag_names: set[str] = set()    # names bound to the flags module (`flags = tf.app.flags`)
        self.values: set[str] = set()        # names bound to FLAGS (`FLAGS = flags.FLAGS`)
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                value = dotted(stmt.value)
                if value in self.modules or value in self.flag_names:
                    self.flag_names.add(stmt.targets[0].id)
                elif value is not None and self._is_flags_object(value):
                    self.values.add(stmt.targets[0].id)

    def _is_flags_object(self, name: str) -> bool:
        head, _, last = name.rpartition(".")
        return last == "FLAGS" and (head in self.modules or head in self.flag_names)

    def uses(self, tree: ast.Module) -> bool:
        return any(dotted(n) in self.modules | self.runs for n in ast.walk(tree) if isinstance(n, ast.Attribute))

    def is_define(self, call: ast.Call) -> bool:
        func = dotted(call.func)
        head, _, last = (func or "").rpartition(".")
        return last in _DEFINES and (head in self.modules or head in self.flag_names)

    def reads_value(self, node: ast.AST) -> bool:
        """`FLAGS.x` (or `flags.FLAGS.x`, `tf.app.flags.FLAGS.x`) read somewhere in `node`."""
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
                base = dotted(n.value)
                if base is not None and (base in self.values or self._is_flags_object(base)):
                    return True
        return False


def _at_import(stmt: ast.stmt):
    """The nodes of a top-level statement that run when the module runs (not the bodies
    of the functions and classes it defines; a class body runs)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [*stmt.decorator_list, *stmt.args.defaults, *stmt.args.kw_defaults]
    return [stmt]


def absl_form(source: bytes, original: bytes) -> tuple[bytes, tuple | None]:
    """(the source with TF1's flags as absl's, the refusal of a form that cannot be, if any)."""
    if b"flags" not in source and b"app.run" not in source:
        return source, None
    tree = ast.parse(source)
    aliases = {a.asname or a.name for s in tree.body if isinstance(s, ast.Import) for a in s.names
               if a.name == "tensorflow"}
    reading = _Reading(tree, aliases)
    if not aliases or not reading.uses(tree):
        return source, None
    where = _line_in(original, reading)
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {a.asname or a.name.partition(".")[0] for s in ast.walk(tree) if isinstance(s, (ast.Import, ast.ImportFrom))
              for a in s.names if not (isinstance(s, ast.Import) and a.name.startswith("absl"))}
    if "absl" in bound:
        return source, diagnostic(where[0], where[1], "flags_form", detail="the name `absl` is bound otherwise in this file")
    parse_at, refusal = _parse_point(tree, reading)
    if refusal is not None:
        return source, diagnostic(where[0], where[1], "flags_form", detail=refusal)
    runs = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and dotted(n.func) in reading.runs]
    if any(not n.args and not any(k.arg == "main" for k in n.keywords) for n in runs) and \
            not any(isinstance(s, (ast.FunctionDef, ast.Assign)) and "main" in _names_bound(s) for s in tree.body):
        return source, diagnostic(where[0], where[1], "flags_form", detail="`app.run()` calls `__main__.main`, which this file "
                                                               "does not define at its top level")
    has_sys = any(isinstance(s, ast.Import) and any(a.name == "sys" and not a.asname for a in s.names)
                  for s in tree.body)
    if parse_at is not None and not has_sys and "sys" in bound:
        return source, diagnostic(where[0], where[1], "flags_form", detail="the name `sys` is bound otherwise in this file")
    module = cst.parse_module(source)
    added = ["absl.app"] * bool(runs) + ["absl.flags"] + ["sys"] * (parse_at is not None and not has_sys)

    def placed(code: str) -> bytes:
        lines = code.splitlines(keepends=True)   # (no line added or removed by the visit)
        if parse_at is not None:
            lines.insert(parse_at - 1, "absl.flags.FLAGS(sys.argv)  # (TF1's FLAGS parsed the arguments at this first read)\n")
        lines[_after_imports(tree):_after_imports(tree)] = [f"import {name}\n" for name in added]
        return "".join(map(_as_black_splits, lines)).encode(module.encoding)

    # (a define black split that absl's shorter keywords fit on one line: joined, as black joins it)
    return refit_source(placed(module.code), placed(module.visit(_ToAbsl(reading)).code)), None


def _as_black_splits(line: str) -> str:
    """A call the parser argument made longer than black's 88 columns, laid out as black
    lays it out (cst/layout.py), so a black user's diff stays clean."""
    if _PARSER not in line:
        return line
    body = line.rstrip("\n")
    indent = len(body) - len(body.lstrip())
    laid = fit(body.strip(), indent)
    return "".join(" " * indent + part + "\n" for part in laid.split("\n"))

def _names_bound(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.FunctionDef):
        return {stmt.name}
    return {t.id for t in getattr(stmt, "targets", []) if isinstance(t, ast.Name)}


def _parse_point(tree: ast.Module, reading: _Reading) -> tuple[int | None, str | None]:
    """The line before which the explicit parse goes (None: no value is read before
    `app.run` parses), or why it cannot be placed."""
    first_read = next((s for s in tree.body if any(reading.reads_value(n) for n in _at_import(s))), None)
    if first_read is None:
        return None, None
    defines = [s for s in tree.body if any(isinstance(n, ast.Call) and reading.is_define(n) for n in ast.walk(s))]
    nested = [n for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
              for n in ast.walk(s) if isinstance(n, ast.Call) and reading.is_define(n)]
    if nested or any(s.lineno > first_read.lineno for s in defines):
        return None, (f"`FLAGS` is read when the module runs (line {first_read.lineno}) before every flag is "
                      "defined at its top level")
    return first_read.lineno, None


def _after_imports(tree: ast.Module) -> int:
    """The index of the line after the `import tensorflow` statement."""
    stmt = next(s for s in tree.body if isinstance(s, ast.Import) and any(a.name == "tensorflow" for a in s.names))
    return stmt.end_lineno or stmt.lineno


def _line_in(original: bytes, reading: _Reading) -> tuple[int, int]:
    """Where the original first spells TF1's flags (for a refusal)."""
    try:
        tree = ast.parse(original)
    except SyntaxError:
        return 1, 1
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and dotted(node) in reading.modules | reading.runs:
            return node.lineno, node.col_offset + 1
    return 1, 1


class _ToAbsl(cst.CSTTransformer):
    def __init__(self, reading: _Reading):
        self.reading = reading

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        name = cst_dotted(original)
        if name in self.reading.modules:
            return cst.parse_expression("absl.flags")
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        name = cst_dotted(original.func)
        if name in self.reading.runs:
            args = list(updated.args)
            if not any(a.keyword is None or a.keyword.value == "main" for a in args):
                args.insert(0, cst.Arg(cst.Name("main")))
            args.append(cst.Arg(cst.parse_expression(_PARSER), keyword=cst.Name("flags_parser"),
                                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
            return updated.with_changes(func=cst.parse_expression("absl.app.run"), args=args)
        head, _, last = (name or "").rpartition(".")
        if last in _DEFINES and (head in self.reading.modules or head in self.reading.flag_names):
            return updated.with_changes(args=[a.with_changes(keyword=cst.Name(_OLD_KEYWORDS[a.keyword.value]))
                                              if a.keyword is not None and a.keyword.value in _OLD_KEYWORDS else a
                                              for a in updated.args])
        return updated
