"""Render a VerifyResult: terminal summary, JSON, JUnit XML, Markdown, plot.

JUnit has one testcase per compared quantity kind so CI dashboards show
which kind of quantity broke; Markdown is a short table for job summaries.
matplotlib is imported only when a plot is requested (it is slow to load).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tf1gradfix.verify import aligned_random
from tf1gradfix.verify.comparison import KINDS


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return "inf" if math.isinf(x) else f"{x:.3g}"
    return str(x)


_NOISE = ("I0000 ", "W0000 ", "E0000 ", "WARNING: All log messages before absl")
# the tool's own lines in a side's stderr, not the program's: runpy's warning about the
# runner module (and the `warn(...)` line under it), TensorFlow's start-up info log
# (`2026-01-01 12:00:00.000000: I tensorflow/...` and its CPU-instructions sequel)
_OWN_NOISE = re.compile(r".*RuntimeWarning: 'tf1gradfix\.[\w.]+' found in sys\.modules"
                        r"|\s*warn\(RuntimeWarning\(msg\)\)$"
                        r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: I (tensorflow|external)/"
                        r"|To enable the following instructions: .* rebuild TensorFlow")


def _tail(text: str, lines: int = 15) -> str:
    """Last lines of a stderr, without TensorFlow's start-up log chatter and the tool's own
    warnings (the program's lines are all kept)."""
    kept = [line for line in text.rstrip().splitlines()
            if not line.startswith(_NOISE) and not _OWN_NOISE.match(line)]
    return "\n".join(kept[-lines:])


def shown(path) -> str:
    """A program's path as reports show it: relative to the run's folder when under it
    (`pkg/a.py`, not the basename `a.py` two files may share), else as given."""
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix() if p.is_absolute() else p.as_posix()
    except ValueError:
        return p.as_posix()


def counted(n: int, thing: str) -> str:
    """`1 step`, `2 steps`, `1 line of text`, `3 lines of text`: the plural where it belongs."""
    if n == 1:
        return f"1 {thing}"
    head, sep, tail = thing.partition(" of ")
    return f"{n} {head}s{sep}{tail}"


def summary(result) -> str:
    """The terminal summary: verdict, what was compared, worst errors, first divergence."""
    out = [f"{result.headline}: {result.reason}",
           f"  original: {result.original.script}",
           f"  migrated: {result.migrated.script}"]
    for side in (result.original, result.migrated):
        if side.failed and side.status != "killed":
            out.append(f"  {side.role} {side.reason}; last lines of its stderr:")
            out.extend("    | " + line for line in _tail(side.stderr_tail).splitlines())
    if result.mapping or result.unmatched:
        out.append(f"  variables: {len(result.mapping)} initialized from the original"
                   + (f", {len(result.unmatched)} without an original (optimizer state etc.)"
                      if result.unmatched else ""))
        for m in result.mapping[:12]:
            how = m.get("matched_by", "name")
            out.append(f"    {m['original']} -> {m['migrated']} {m['shape']}"
                       + (f" (by {how})" if how != "name" else ""))
        if len(result.mapping) > 12:
            out.append(f"    ... {len(result.mapping) - 12} more")
        for u in [u for u in result.unmatched if u.get("trainable")][:12]:
            out.append(f"    (no original) {u['name']} {u['shape']} trainable")
    aligned = aligned_random.describe(getattr(result, "random_numbers", {}))
    if aligned:
        out.append(f"  random numbers: {aligned}")
    c = result.comparison
    if c is not None:
        shown = "".join(f", {counted(c.stats[k].compared, what)}" for k, what in
                        (("printed text", "line of text"), ("plotted value", "plotted array"),
                         ("summary value", "summary value")) if c.stats[k].compared)
        out.append(f"  compared: {counted(c.steps, 'step')}, {counted(c.gradients, 'gradient')}, "
                   f"{counted(c.variables, 'variable')}, {counted(c.printed_numbers, 'printed number')}{shown} "
                   f"(rtol={result.rtol:g}, atol={result.atol:g})")
        for kind in KINDS:
            st = c.stats[kind]
            if st.compared:
                out.append(f"    {kind:<15} {st.compared:>6} compared, max abs error {_fmt(st.max_abs_err)}, "
                           f"max rel error {_fmt(st.max_rel_err)}"
                           + (f", {st.diverged} diverged" if st.diverged else ""))
        first = c.first
        if first is not None:
            out.append(f"  {_first_label(result)}: {first.describe()}")
            if len(c.divergences) > 1:
                out.append(f"  ({len(c.divergences)} divergent quantities in total)")
        for note in c.notes:
            out.append(f"  note: {note}")
    out.extend(_lockstep_lines(result))
    rerun = getattr(result, "original_rerun", None)
    if rerun is not None:   # (verify/original_runs.py)
        out.append(f"  original run again: {rerun.status}, {rerun.elapsed:.1f} s, {rerun.compared} quantities compared"
                   + (f": {rerun.reason}" if rerun.reason else ""))
    out.extend(f"  legacy training bug, kept as TF1 ran it: {line}" for line in getattr(result, "legacy", ()))
    out.append(f"  time: {result.elapsed:.1f} s (original {result.original.elapsed:.1f} s, "
               f"migrated {result.migrated.elapsed:.1f} s, run concurrently)")
    return "\n".join(out)


def _first_label(result) -> str:
    ls = getattr(result, "lockstep", None)
    if ls is not None and ls.status == "agreed" and result.verdict == "EQUIVALENT":
        return "first divergence of the plain run (drift: every step agrees in lockstep)"
    return "first divergence" + (" of the plain run" if ls is not None and ls.status == "diverged" else "")


LOCKSTEP_COMPARES = ("each step from the original's state: its loss, gradients, applied update and printed "
                     "output, and the change it made to every variable and optimizer slot given the original's "
                     "gradients")


def _lockstep_lines(result) -> list:
    """The second, lockstep run (verify/lockstep.py): what it compared and what it found."""
    ls = getattr(result, "lockstep", None)
    if ls is None:
        return []
    if ls.comparison is None:
        return [f"  lockstep: {ls.status}" + (f": {ls.reason}" if ls.reason else "")]
    out = [f"  lockstep: {ls.status}, {ls.elapsed:.1f} s ({LOCKSTEP_COMPARES})"]
    for kind, st in ls.comparison.stats.items():
        if st.compared:
            out.append(f"    {kind:<15} {st.compared:>6} compared, max abs error {_fmt(st.max_abs_err)}, "
                       f"max rel error beyond atol {_fmt(st.max_rel_beyond_atol)}"
                       + (f", {st.diverged} diverged" if st.diverged else ""))
    if ls.comparison.first is not None:
        out.append(f"    first divergence: {ls.comparison.first.describe()}")
    out.extend(f"    note: {note}" for note in ls.comparison.notes)
    return out


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml_safe(root: ET.Element) -> None:
    """Characters XML 1.0 cannot hold (control characters in a file name or a program's
    output) as `\\xNN` escapes, so the report stays well-formed."""
    def clean(text):
        return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text) if text else text
    for element in root.iter():
        element.text, element.tail = clean(element.text), clean(element.tail)
        for key, value in element.attrib.items():
            element.attrib[key] = clean(value)


def to_junit(result) -> ET.ElementTree:
    name = f"{shown(result.original.script)} -> {shown(result.migrated.script)}"
    suite = ET.Element("testsuite", name=f"tf1gradfix verify: {name}")
    classname = shown(result.original.script)   # one per file: CI groups a file's cases under it
    cases = []
    c = result.comparison
    if result.verdict in ("ORIGINAL_FAILED", "MIGRATED_FAILED", "NOT_COMPARABLE"):
        case = ET.Element("testcase", classname=classname, name="run")
        err = ET.SubElement(case, "error", message=f"{result.headline}: {result.reason}", type=result.verdict)
        failing = result.original if result.verdict == "ORIGINAL_FAILED" else result.migrated
        err.text = _tail(failing.stderr_tail, 40)
        cases.append(case)
    if c is not None:
        for kind in KINDS + ("events",):
            divs = [d for d in c.divergences if d.quantity == kind]
            st = c.stats.get(kind)
            if not divs and (st is None or not st.compared):
                continue
            case = ET.Element("testcase", classname=classname, name=kind)
            if divs:
                first = min(divs, key=lambda d: d.order)
                f = ET.SubElement(case, "failure", message=first.describe(), type="DIVERGED")
                f.text = "\n".join(d.describe() for d in sorted(divs, key=lambda d: d.order)[:20])
            elif st is not None:
                ET.SubElement(case, "system-out").text = (
                    f"{st.compared} compared, max abs error {_fmt(st.max_abs_err)}, "
                    f"max rel error {_fmt(st.max_rel_err)}")
            cases.append(case)
    ls = getattr(result, "lockstep", None)
    if ls is not None and ls.comparison is not None:
        case = ET.Element("testcase", classname=classname, name="lockstep")
        if ls.status == "diverged" and ls.comparison.first is not None:
            ET.SubElement(case, "failure", message=ls.comparison.first.describe(), type="DIVERGED")
        else:
            ET.SubElement(case, "system-out").text = f"{ls.status}: {LOCKSTEP_COMPARES}"
        cases.append(case)
    if getattr(result, "budget", None):   # a partial proof says so in CI too
        case = ET.Element("testcase", classname=classname, name="budget")
        ET.SubElement(case, "system-out").text = (f"partial: compared within the first "
                                                  f"{result.budget['steps_compared']} training steps")
        props = ET.SubElement(suite, "properties")
        for key in ("steps_compared", "loop_cut", "partial"):
            ET.SubElement(props, "property", name=f"budget.{key}", value=str(result.budget[key]).lower())
        cases.append(case)
    suite.extend(cases)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for x in cases if x.find("failure") is not None)))
    suite.set("errors", str(sum(1 for x in cases if x.find("error") is not None)))
    suite.set("time", f"{result.elapsed:.3f}")
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.ElementTree(root)


def to_markdown(result) -> str:
    icon = {"EQUIVALENT": "✅", "DIVERGED": "❌"}.get(result.verdict, "⚠️")
    lines = [f"### {icon} {result.headline}: `{shown(result.original.script)}` → "
             f"`{shown(result.migrated.script)}`", "", result.reason.replace("|", "\\|"), ""]
    c = result.comparison
    lines += ["| quantity | compared | max abs error | max rel error | diverged |",
              "| --- | ---: | ---: | ---: | ---: |"]
    if c is not None:
        for kind in [k for k in KINDS if c.stats[k].compared or c.stats[k].diverged]:   # (none never recorded)
            st = c.stats[kind]
            lines.append(f"| {kind} | {st.compared} | {_fmt(st.max_abs_err)} | {_fmt(st.max_rel_err)} "
                         f"| {st.diverged} |")
        if c.first is not None:
            lines += ["", f"{_first_label(result).capitalize()}: {c.first.describe()}".replace("|", "\\|")]
    else:
        lines.append("| (not compared) | 0 | - | - | - |")
    lines += _lockstep_markdown(result)
    aligned = aligned_random.describe(getattr(result, "random_numbers", {}))
    lines += [""] + ([f"Random numbers: {aligned}.", ""] if aligned else [])
    legacy = getattr(result, "legacy", ())
    lines += ["Legacy training bugs, kept as TF1 ran them:", *(f"- {line}" for line in legacy), ""] if legacy else []
    lines += [f"Tolerances: rtol={result.rtol:g}, atol={result.atol:g}."]
    return "\n".join(lines) + "\n"


def _lockstep_markdown(result) -> list:
    ls = getattr(result, "lockstep", None)
    if ls is None:
        return []
    head = f"Lockstep: {ls.status}" + (f" ({ls.reason})" if ls.reason else "")
    lines = ["", head.replace("|", "\\|") + "."]
    if ls.comparison is not None:
        lines += [f"The second run compared {LOCKSTEP_COMPARES}.", "",
                  "| quantity (lockstep) | compared | max abs error | max rel error beyond atol | diverged |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        lines += [f"| {kind} | {st.compared} | {_fmt(st.max_abs_err)} | {_fmt(st.max_rel_beyond_atol)} | {st.diverged} |"
                  for kind, st in ls.comparison.stats.items() if st.compared]
        if ls.comparison.first is not None:
            lines += ["", f"First divergence in lockstep: {ls.comparison.first.describe()}".replace("|", "\\|")]
    return lines


def has_loss(result) -> bool:
    """Whether either side recorded a loss: a picture of nothing is left out of a report folder."""
    c = result.comparison
    return c is not None and bool(c.loss_original or c.loss_migrated)


def write_plot(result, path) -> None:
    """Overlay both loss curves and mark the first divergent step."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def clean(values):
        return [float(v) if not isinstance(v, str) else float("nan") for v in values]

    c = result.comparison
    fig, ax = plt.subplots(figsize=(7, 4))
    lo, lm = (clean(c.loss_original), clean(c.loss_migrated)) if c else ([], [])
    if lo:
        ax.plot(range(1, len(lo) + 1), lo, label="original (TF1)", linewidth=2.5, alpha=0.7)
    if lm:
        ax.plot(range(1, len(lm) + 1), lm, label="migrated (TF2)", linestyle="--", linewidth=1.5)
    first = c.first if c else None
    if first is not None and first.step is not None:
        ax.axvline(first.step, color="red", linestyle=":", label=f"first divergence (step {first.step})")
    if not lo and not lm:
        ax.text(0.5, 0.5, "no loss recorded", ha="center", va="center", transform=ax.transAxes)
    positive = [v for v in lo + lm if v == v and v > 0]
    if positive and len(positive) == len([v for v in lo + lm if v == v]) and \
            max(positive) / min(positive) > 100:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(f"{result.headline}: {shown(result.original.script)} vs "
                 f"{shown(result.migrated.script)}", fontsize=10)
    if ax.get_legend_handles_labels()[0]:   # (an empty legend is a matplotlib warning)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _write_text(path, text: str) -> None:
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


class ReportError(SystemExit):
    """A requested report could not be written: each failure was said in one line
    on stderr; the command ends with exit 2 (after the verdict was printed)."""

    def __init__(self, failures: list):
        super().__init__(2)
        self.failures = failures


def write_text(path, text: str) -> None:
    """Write a text file atomically (temporary file, then rename)."""
    _write_text(path, text)


def write_reports(results, *, json=None, junit=None, markdown=None, plot=None, refused=()) -> None:  # noqa: A002
    """Write whichever reports were asked for (each argument is a path or None).
    `refused`: (path, why) of files a run left unchanged without a proof (`rewrite
    --verify --report-dir`: not restructured), a JUnit test case skipped and a Markdown
    section each.

    ``results`` is one VerifyResult or a list of them (``rewrite --verify``
    over several files): JSON then holds a list, JUnit one testsuite per
    pair, Markdown one section per pair, and the plot one picture per pair
    (``loss.png`` -> ``loss-1.png``, ``loss-2.png``, ...). Every report is
    attempted; those that fail raise ReportError at the end.
    """
    many = isinstance(results, (list, tuple))
    items = list(results) if many else [results]
    failures = []

    def attempt(what, path, write):
        try:
            write()
        except ImportError:
            failures.append(f"cannot write the {what} {path}: it needs matplotlib (pip install matplotlib)")
        except (OSError, ValueError) as exc:   # ValueError: a format matplotlib does not write
            failures.append(f"cannot write the {what} {path}: {getattr(exc, 'strerror', None) or exc}")

    if json is not None:
        data = [r.to_json() for r in items]
        attempt("JSON report", json, lambda: _write_text(json, _json_dumps(data if many else data[0])))
    if junit is not None:
        root = ET.Element("testsuites")
        for r in items:
            root.append(to_junit(r).getroot().find("testsuite"))
        if refused:
            root.append(_refused_suite(refused))
        tree = ET.ElementTree(root)
        ET.indent(tree)
        _xml_safe(root)
        text = ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
        attempt("JUnit report", junit, lambda: _write_text(junit, text))
    if markdown is not None:
        text = "\n".join([*(to_markdown(r) for r in items), *([_refused_markdown(refused)] if refused else []),
                          _totals_markdown(items, refused)])
        attempt("Markdown report", markdown, lambda: _write_text(markdown, text))
    if plot is not None:
        plot = Path(plot)
        for i, r in enumerate(items, 1):
            target = plot if not many else plot.with_name(f"{plot.stem}-{i}{plot.suffix}")
            attempt("plot", target, lambda: _write_plot_file(r, target))
    for failure in failures:
        print(f"tf1gradfix: {failure}", file=sys.stderr, flush=True)
    if failures:
        raise ReportError(failures)


def _refused_suite(refused) -> ET.Element:
    suite = ET.Element("testsuite", name="tf1gradfix: not restructured", tests=str(len(refused)),
                       failures="0", errors="0", skipped=str(len(refused)))
    for path, why in refused:
        case = ET.SubElement(suite, "testcase", classname=shown(path), name=shown(path))
        ET.SubElement(case, "skipped", message=f"not restructured (left unchanged): {why}")
    return suite


def _refused_markdown(refused) -> str:
    lines = [f"## Not restructured ({len(refused)} file{'s' if len(refused) != 1 else ''}, left unchanged)", ""]
    lines += [f"- `{path}`: {why}" for path, why in refused]
    return "\n".join(lines) + "\n"


def _totals_markdown(items, refused) -> str:
    """The last line of a summary: how many files, and how many of each verdict."""
    verdicts: dict = {}
    for r in items:
        verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
    if refused:
        verdicts["not restructured"] = len(refused)
    parts = ", ".join(f"{n} {verdict}" for verdict, n in verdicts.items())
    return f"**Total: {counted(len(items) + len(refused), 'file')}**" + (f": {parts}" if parts else "") + ".\n"


def _write_plot_file(result, path: Path) -> None:
    """The picture, written aside then renamed, like the text reports."""
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ValueError(f"a picture must end in .png, .svg or .pdf, not {path.suffix or 'nothing'}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}{path.suffix}")
    try:
        write_plot(result, tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _json_dumps(obj) -> str:
    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return str(x)
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x
    return json.dumps(clean(obj), indent=2) + "\n"
