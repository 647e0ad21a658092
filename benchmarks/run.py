"""tf1gradfix benchmarks: speed against tf_upgrade_v2, start-up, verify overhead, memory, scaling.

    .venv/bin/python benchmarks/run.py             # full run (several minutes)
    .venv/bin/python benchmarks/run.py --quick     # small smoke run
    .venv/bin/python benchmarks/run.py --repeat 5  # more repetitions per figure

Corpora are generated in a temporary folder (see benchmarks/corpus.py).
Competitors are measured in the same run, alternating their order on each
repetition; every figure is a median with min and max, and ratios are taken
between runs of the same repetition.  See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import platform
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import corpus  # noqa: E402

BIN = Path(sys.executable).parent
TF1GRADFIX = str(BIN / "tf1gradfix")
TF_UPGRADE = str(BIN / "tf_upgrade_v2")
PAGE = os.sysconf("SC_PAGE_SIZE")
# Bytecode caches allowed, as an installed tool has them: a cold start that
# compiled tf1gradfix's own modules from source every time would measure the
# compiler. (Both tools import from installed or checked-out packages; the
# corpora themselves are never imported.)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"TF_CPP_MIN_LOG_LEVEL": "2"}


# --------------------------------------------------------------------------- measuring

def _tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and all its descendants, now."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total


class Run:
    """One subprocess: wall seconds, its largest single process, its sampled tree peak."""

    def __init__(self, cmd, cwd=None, env=None):
        out = tempfile.TemporaryFile()
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env or ENV, stdout=out, stderr=subprocess.STDOUT)
        peak, stop = [0], threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], _tree_rss(proc.pid))
                stop.wait(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)  # rusage of this child and its reaped descendants
        self.wall = time.perf_counter() - start
        stop.set()
        sampler.join()
        proc.returncode = self.rc = os.waitstatus_to_exitcode(status)
        self.max_rss_mb = usage.ru_maxrss / 1024  # largest single process of the tree (Linux: KiB)
        self.tree_peak_mb = peak[0] / 2**20  # sum over the tree, sampled every 50 ms
        out.seek(0)
        self.output = out.read().decode("utf-8", "replace")
        out.close()


def stats(values):
    values = list(values)
    return statistics.median(values), min(values), max(values)


def fmt(values, unit="s", digits=2):
    values = list(values)
    med, lo, hi = stats(values)
    return f"{med:.{digits}f}{unit} (min {lo:.{digits}f}, max {hi:.{digits}f}, n={len(values)})"


def count_lines(folder: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in folder.rglob("*.py"))


def write_tree(folder: Path, files) -> None:
    folder.mkdir(parents=True)
    for name, text in files:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def fresh_copy(template: Path, work: Path, label: str) -> Path:
    target = work / label
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(template, target)
    return target


def rotate(items, r):
    r %= len(items)
    return items[r:] + items[:r]


def header(title):
    print(f"\n=== {title} " + "=" * max(0, 70 - len(title)), flush=True)


# --------------------------------------------------------------------------- competitors

def compare_rewrite(template: Path, work: Path, repeat: int, variants):
    """Alternate tf1gradfix and tf_upgrade_v2 on fresh identical copies; returns {name: [Run]}."""
    runs = {name: [] for name in variants}
    outputs = {}
    for r in range(repeat):
        for name in rotate(list(variants), r):
            tree = fresh_copy(template, work, "in")
            out = work / "out"
            if out.exists():
                shutil.rmtree(out)
            if name.startswith("tf_upgrade_v2"):
                cmd = [TF_UPGRADE, "--intree", str(tree), "--outtree", str(out), "--reportfile", str(work / "report.txt")]
            else:
                cmd = [TF1GRADFIX, "rewrite", "--no-verify", *variants[name], str(tree)]  # (the static rewrite: no proof runs)
            run = Run(cmd, cwd=work)
            runs[name].append(run)
            print(f"  rep {r + 1} {name:<24} {run.wall:7.2f}s  rc={run.rc}  max-rss {run.max_rss_mb:6.0f} MB  "
                  f"tree peak {run.tree_peak_mb:6.0f} MB", flush=True)
            if r == 0:
                result = out if name.startswith("tf_upgrade_v2") else tree
                outputs[name] = {p.relative_to(result): p.read_bytes() for p in result.rglob("*.py")}
                if name.startswith("tf1gradfix"):
                    summary = [line for line in run.output.splitlines() if "files checked" in line]
                    print(f"      {summary[-1] if summary else run.output.strip().splitlines()[-1:]}")
                else:
                    said = re.findall(r"^(Converted \d+ files|Detected \d+ issues.*)$", run.output, re.M)
                    errors = len(re.findall(r"ERROR", (work / "report.txt").read_text(errors="replace")))
                    print(f"      {'; '.join(said)}; report ERROR lines: {errors}")
    findings = []
    tfg = [n for n in outputs if n.startswith("tf1gradfix")]
    if len(tfg) == 2 and outputs[tfg[0]] != outputs[tfg[1]]:
        differing = [str(p) for p in outputs[tfg[0]] if outputs[tfg[0]][p] != outputs[tfg[1]].get(p)]
        findings.append(f"tf1gradfix output differs between {tfg[0]} and {tfg[1]} in {len(differing)} files, "
                        f"e.g. {differing[:3]}")
    return runs, findings


def ratios(runs, slow, fast):
    return [s.wall / f.wall for s, f in zip(runs[slow], runs[fast])]


# --------------------------------------------------------------------------- parts

def part_same_work(work, copies, repeat, table, findings):
    header(f"1. same work: TF1 scripts ({copies} varied copies of each fixture)")
    files = corpus.tf1_variants(copies)
    template = work / "tf1_template"
    write_tree(template, files)
    lines = count_lines(template)
    print(f"  corpus: {len(files)} files, {lines} lines")
    variants = {"tf1gradfix (default -j)": [], "tf_upgrade_v2": [], "tf1gradfix -j 1": ["-j", "1"]}
    runs, more = compare_rewrite(template, work, repeat, variants)
    findings += more
    for name, rs in runs.items():
        print(f"  {name:<24} wall {fmt(r.wall for r in rs)}   {statistics.median(lines / r.wall for r in rs):8.0f} lines/s")
    for fast in ("tf1gradfix (default -j)", "tf1gradfix -j 1"):
        rs = ratios(runs, "tf_upgrade_v2", fast)
        print(f"  speed-up of {fast} over tf_upgrade_v2: {fmt(rs, 'x')}")
        table.append((f"1. TF1 corpus ({len(files)} files, {lines} lines): tf1gradfix {fast.split(' ', 1)[1]} "
                      f"vs tf_upgrade_v2", f"{statistics.median(rs):.2f}x faster "
                      f"({statistics.median(r.wall for r in runs[fast]):.1f}s vs "
                      f"{statistics.median(r.wall for r in runs['tf_upgrade_v2']):.1f}s)",
                      ">= 1.5x", statistics.median(rs) >= 1.5))
    return runs, template


def part_realistic(work, tf1_copies, plain_count, repeat, table, findings):
    header(f"2. realistic repository: TF1 scripts + {plain_count} files without TensorFlow")
    import random

    rng = random.Random(7)
    files = [(f"models/{name}", text) for name, text in corpus.tf1_variants(tf1_copies, seed=3)]
    files += [(f"pkg{i % 40:02d}/mod_{i:05d}.py", corpus.plain_module(i, rng)) for i in range(plain_count)]
    template = work / "repo_template"
    write_tree(template, files)
    lines = count_lines(template)
    tf1 = sum(1 for name, _ in files if name.startswith("models/"))
    print(f"  corpus: {len(files)} files ({tf1} TF1, {len(files) - tf1} plain), {lines} lines")
    variants = {"tf1gradfix (default -j)": [], "tf_upgrade_v2": []}
    runs, more = compare_rewrite(template, work, repeat, variants)
    findings += more
    for name, rs in runs.items():
        print(f"  {name:<24} wall {fmt(r.wall for r in rs)}   {statistics.median(lines / r.wall for r in rs):8.0f} lines/s")
    rs = ratios(runs, "tf_upgrade_v2", "tf1gradfix (default -j)")
    print(f"  speed-up of tf1gradfix over tf_upgrade_v2: {fmt(rs, 'x')}")
    table.append((f"2. repository ({len(files)} files, {tf1} TF1, {lines} lines): tf1gradfix vs tf_upgrade_v2",
                  f"{statistics.median(rs):.2f}x faster ({statistics.median(r.wall for r in runs['tf1gradfix (default -j)']):.1f}s"
                  f" vs {statistics.median(r.wall for r in runs['tf_upgrade_v2']):.1f}s)", ">= 3x",
                  statistics.median(rs) >= 3))
    return runs


def part_modern_syntax(work, findings):
    header("2b. modern syntax: does each tool read it?")
    folder = work / "modern"
    folder.mkdir()
    for i, (label, text) in enumerate(corpus.MODERN_SYNTAX.items()):
        path = folder / f"probe_{i}.py"
        path.write_text(text)
        up = Run([TF_UPGRADE, "--infile", str(path), "--outfile", str(folder / f"out_{i}.py"),
                  "--reportfile", str(folder / f"report_{i}.txt")], cwd=folder)
        tfg = Run([TF1GRADFIX, "check", str(path)], cwd=folder)
        report = (folder / f"report_{i}.txt")
        text_report = report.read_text(errors="replace") if report.exists() else ""
        trouble = [line.strip() for line in (up.output + "\n" + text_report).splitlines()
                   if re.search(r"Error|error:|Traceback|Failed to parse|Exception", line)
                   and "absl::InitializeLog" not in line]
        up_ok = up.rc == 0 and not trouble and (folder / f"out_{i}.py").exists()
        tfg_ok = tfg.rc in (0, 1)
        tfg_note = "reads it" if tfg_ok else f"rc={tfg.rc}: " + " | ".join(tfg.output.strip().splitlines()[-2:])
        up_note = "reads it" if up_ok else f"rc={up.rc}: " + _crash(up.output, trouble)
        print(f"  {label:<30} tf_upgrade_v2: {up_note}")
        print(f"  {'':<30} tf1gradfix:    {tfg_note}")
        if not up_ok:
            findings.append(f"tf_upgrade_v2 fails on {label}: {up_note}")
        if not tfg_ok:
            findings.append(f"tf1gradfix fails on {label}: {tfg_note}")


def _crash(output, trouble):
    """The exception and the frame it came from, from a traceback in `output`."""
    lines = output.splitlines()
    frames = [i for i, line in enumerate(lines) if re.match(r'\s*File "', line)]
    if not frames:
        return " | ".join(dict.fromkeys(trouble))[:300] or output.strip()[-300:]
    i = frames[-1]
    frame = re.sub(r'"[^"]*site-packages/', '"', lines[i].strip())
    rest = [line.strip() for line in lines[i + 2:] if line.strip() and set(line.strip()) - set("^~ ")]
    return f"{' | '.join(rest)[:300]}  [{frame}]"


def part_cold_start(work, runs_count, table):
    header(f"3. cold start: `tf1gradfix check FILE`, fresh process each, {runs_count} runs")
    tf1 = work / "cold_tf1.py"
    shutil.copy(ROOT / "fixtures" / "verify" / "dev_linear_sgd" / "original.py", tf1)
    tf2 = work / "cold_tf2.py"  # the same program migrated: what pre-commit checks after the migration
    shutil.copy(ROOT / "fixtures" / "verify" / "dev_linear_sgd" / "migrated.py", tf2)
    import random

    plain = work / "cold_plain.py"
    plain.write_text(corpus.plain_module(1, random.Random(1)))
    py = sys.executable
    # Cold means no stored result: the check cache is off, except for one
    # figure that reads a result stored by an earlier run (a repeated check).
    uncached = dict(ENV, TF1GRADFIX_NO_CACHE="1")
    cached = dict(ENV, TF1GRADFIX_CACHE_DIR=str(work / "check_cache"))
    commands = {
        "check TF1 file": ([TF1GRADFIX, "check", str(tf1)], uncached),
        "check TF2 file": ([TF1GRADFIX, "check", str(tf2)], uncached),
        "check plain file": ([TF1GRADFIX, "check", str(plain)], uncached),
        "check TF1 file, cached": ([TF1GRADFIX, "check", str(tf1)], cached),
        "python -c pass": ([py, "-c", "pass"], None),
        IMPORT_AST: ([py, "-c", "import ast"], None),
        LIBCST: ([py, "-c", "import libcst"], None),
    }
    Run(commands["check TF1 file, cached"][0], cwd=work, env=cached)  # stores the result (and any bytecode)
    times = {name: [] for name in commands}
    for r in range(runs_count):
        for name in rotate(list(commands), r):
            cmd, env = commands[name]
            times[name].append(Run(cmd, cwd=work, env=env).wall)
    for name, ts in times.items():
        print(f"  {name:<28} {fmt(ts, 's', 3)}")
    for name in ("check TF1 file", "check TF2 file", "check plain file", "check TF1 file, cached"):
        med = statistics.median(times[name])
        goal = 0.15 if name == "check TF1 file" else 0.3
        table.append((f"3. cold `tf1gradfix {name}`", f"{med:.3f}s", f"<= {goal}s", med <= goal))
    # Ratios of runs made side by side (the same round), so load on the machine cancels out.
    for floor in ("python -c pass", IMPORT_AST):
        rs = [check / base for check, base in zip(times["check TF1 file"], times[floor])]
        print(f"  check TF1 file / {floor:<17} {fmt(rs, 'x')}")
        limit = 2.0 if floor == IMPORT_AST else None
        table.append((f"3. cold check of a TF1 file vs `{floor}`", f"{statistics.median(rs):.2f}x",
                      "<= 2x" if limit else "(floor)", statistics.median(rs) <= limit if limit else None))
    table.append(("3. floor: python -c pass / import ast / import libcst",
                  f"{statistics.median(times['python -c pass']):.3f}s / "
                  f"{statistics.median(times[IMPORT_AST]):.3f}s / "
                  f"{statistics.median(times[LIBCST]):.3f}s",
                  "(floor)", None))


# The code before `check` read files with Python's parser instead of LibCST: the corpus
# check is timed against a copy of it, in the same run (`--before` names another commit).
BEFORE_AST_CHECK = "d75b8f8"


def old_copy(work: Path, ref: str) -> Path | None:
    """The package as it was at `ref`, unpacked from git into `work` (None outside a checkout)."""
    folder = work / f"before-{ref}"
    folder.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "tf1gradfix"], capture_output=True)
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def part_check_corpus(work, copies, repeat, ref, table, findings):
    header(f"3b. `tf1gradfix check` of the TF1 corpus ({copies} varied copies of each fixture): now vs {ref}")
    before = old_copy(work, ref)
    if before is None:
        findings.append(f"check corpus: no copy of {ref} (not a git checkout); not measured")
        return
    folder = work / "check_corpus"
    write_tree(folder, corpus.tf1_variants(copies))
    env = dict(ENV, TF1GRADFIX_NO_CACHE="1")
    commands = {"now": ([TF1GRADFIX, "check", "."], env),
                ref: ([sys.executable, "-m", "tf1gradfix", "check", "."], dict(env, PYTHONPATH=str(before)))}
    for cmd, env_ in commands.values():
        Run(cmd, cwd=folder, env=env_)  # (bytecode of both copies written once)
    times = {name: [] for name in commands}
    for r in range(max(3, repeat)):
        for name in rotate(list(commands), r):
            cmd, env_ = commands[name]
            times[name].append(Run(cmd, cwd=folder, env=env_).wall)
    for name, ts in times.items():
        print(f"  {name:<10} {fmt(ts)}")
    rs = [old / new for old, new in zip(times[ref], times["now"])]
    print(f"  speed-up: {fmt(rs, 'x')}")
    table.append((f"3b. check of the TF1 corpus ({len(list(folder.rglob('*.py')))} files) vs {ref}",
                  f"{statistics.median(rs):.2f}x faster ({statistics.median(times['now']):.2f}s vs "
                  f"{statistics.median(times[ref]):.2f}s)", ">= 3x", statistics.median(rs) >= 3))


LIBCST = "python -c 'import libcst'"
IMPORT_AST = "python -c 'import ast'"
PLAIN_V1 = ("import sys, runpy, tensorflow.compat.v1 as v1; v1.disable_v2_behavior(); "
            "sys.modules['tensorflow'] = v1; runpy.run_path(sys.argv[1], run_name='__main__')")


def part_verify(work, pairs, repeat, table, findings):
    header(f"4. verify overhead: {', '.join(pairs)}; {repeat} run(s)")
    script = HERE / "verify_overhead.py"
    per_pair = {p: [] for p in pairs}
    totals = []
    for r in range(repeat):
        if script.exists():
            run = Run([sys.executable, str(script), *rotate(pairs, r)], cwd=ROOT)
            print("\n".join("  | " + line for line in run.output.strip().splitlines()), flush=True)
            for line in run.output.splitlines():
                parts = line.split()
                if parts and parts[0] in per_pair and parts[-2].endswith("x"):
                    per_pair[parts[0]].append(float(parts[-2][:-1]))
                if parts and parts[0] == "total" and parts[-1].endswith("x"):
                    totals.append(float(parts[-1][:-1]))
            if run.rc != 0:
                findings.append(f"verify_overhead.py exited {run.rc}: {run.output.strip().splitlines()[-1:]}")
        else:  # measure it ourselves
            seq_sum = ver_sum = 0.0
            for pair in rotate(pairs, r):
                scenario, name = pair.split("/")
                folder = ROOT / "fixtures" / "verify" / scenario
                orig, mig = folder / "original.py", folder / f"{name}.py"
                t_orig = Run([sys.executable, "-c", PLAIN_V1, str(orig)], cwd=folder,
                             env=dict(ENV, TF_USE_LEGACY_KERAS="1")).wall
                t_mig = Run([sys.executable, str(mig)], cwd=folder).wall
                ver = Run([TF1GRADFIX, "verify", str(orig), str(mig)], cwd=folder)
                per_pair[pair].append(ver.wall / (t_orig + t_mig))
                seq_sum, ver_sum = seq_sum + t_orig + t_mig, ver_sum + ver.wall
                print(f"  {pair:<36} original {t_orig:6.1f}s migrated {t_mig:6.1f}s verify {ver.wall:6.1f}s "
                      f"ratio {ver.wall / (t_orig + t_mig):.2f}x rc={ver.rc}", flush=True)
            totals.append(ver_sum / seq_sum)
    for pair, rs in per_pair.items():
        if rs:
            print(f"  {pair:<36} verify / (original then migrated): {fmt(rs, 'x')}")
    if totals:
        print(f"  total ratio: {fmt(totals, 'x')}")
        med = statistics.median(totals)
        table.append((f"4. verify / running both programs one after the other ({len(pairs)} pair(s))",
                      f"{med:.2f}x", "<= 1.0x", med <= 1.0))
    else:
        findings.append("verify overhead: no figures could be read")


def part_pool(quick, table, findings):
    """The warm TensorFlow pool's two figures (benchmarks/verify_pool.py), with their goals."""
    pairs, steps = (5, 2000) if quick else (30, 20000)
    header(f"4b. warm TensorFlow pool: {pairs} fixture pairs; a {steps}-step program")
    run = Run([sys.executable, str(HERE / "verify_pool.py"), "--pairs", str(pairs), "--steps", str(steps)], cwd=ROOT)
    print("\n".join("  | " + line for line in run.output.strip().splitlines()), flush=True)
    figures = re.findall(r"^(\d)\. .*?ratio (?:to the slower )?([\d.]+)x \(goal <= ([\d.]+)x", run.output, re.M)
    for number, ratio, goal in figures:
        name = (f"4b. verify {pairs} pairs in one process / run the originals one by one" if number == "1"
                else f"4b. verify a {steps}-step program / its slower side run plainly")
        table.append((name, f"{float(ratio):.2f}x", f"<= {goal}x", float(ratio) <= float(goal)))
    if run.rc != 0 or len(figures) != 2:
        findings.append(f"verify_pool.py exited {run.rc}: {run.output.strip().splitlines()[-1:]}")


def part_memory(same_runs, repo_runs, table):
    header("5. peak memory of the rewrite runs")
    for label, runs in (("TF1 corpus", same_runs), ("repository", repo_runs)):
        for name, rs in runs.items():
            print(f"  {label:<11} {name:<24} largest process {fmt((r.max_rss_mb for r in rs), ' MB', 0)}; "
                  f"whole tree (sampled) {fmt((r.tree_peak_mb for r in rs), ' MB', 0)}")
        tfg = statistics.median(r.tree_peak_mb for r in runs["tf1gradfix (default -j)"])
        up = statistics.median(r.tree_peak_mb for r in runs["tf_upgrade_v2"])
        tfg1 = statistics.median(r.max_rss_mb for r in runs["tf1gradfix (default -j)"])
        up1 = statistics.median(r.max_rss_mb for r in runs["tf_upgrade_v2"])
        table.append((f"5. peak memory, {label}: tf1gradfix vs tf_upgrade_v2 (tree / largest process)",
                      f"{tfg:.0f} / {tfg1:.0f} MB vs {up:.0f} / {up1:.0f} MB", "(lower is better)", tfg <= up))


def part_large(work, base_models, repeat, table, findings, before_ref=None):
    header(f"6. one large file: {base_models} small models at 1x, then 2x and 4x"
           + (f"; now vs {before_ref}, alternating" if before_ref else ""))
    sizes = {}
    for factor in (1, 2, 4):
        folder = work / f"large_{factor}x"
        folder.mkdir()
        (folder / "big.py").write_text(corpus.large_tf1_file(base_models * factor))
        sizes[factor] = folder
    lines = {f: (sizes[f] / "big.py").read_bytes().count(b"\n") for f in sizes}
    tools = {"now": ([TF1GRADFIX], None)}
    if before_ref:   # the package as it was at `before_ref`, each run next to the current code's
        before = old_copy(work, before_ref)
        if before is None:
            findings.append(f"large file: no copy of {before_ref} (not a git checkout); not compared")
        else:
            tools[before_ref] = ([sys.executable, "-m", "tf1gradfix"], dict(ENV, PYTHONPATH=str(before)))
    runs = {tool: {f: [] for f in sizes} for tool in tools}
    for r in range(repeat):
        for factor in rotate(list(sizes), r):
            for tool in rotate(list(tools), r):
                command, env = tools[tool]
                tree = fresh_copy(sizes[factor], work, "large_in")
                run = Run([*command, "rewrite", "--no-verify", str(tree / "big.py")], cwd=work, env=env)
                runs[tool][factor].append(run)
                if r == 0 and factor == 1 and tool == "now":
                    codes = re.findall(r"\bTFG9\d\d\b[^\n]*", run.output)
                    print(f"  (1x: rc={run.rc}; {codes[0] if codes else 'no TFG9xx refusal'})")
                    if codes:
                        findings.append(f"large file of many models: tf1gradfix refuses it whole ({codes[0].strip()})")
                print(f"  rep {r + 1} {factor}x {lines[factor]:6d} lines {tool:<8} {run.wall:7.2f}s  "
                      f"max-rss {run.max_rss_mb:5.0f} MB", flush=True)
    growth = {}
    for tool, by_size in runs.items():
        per_k = {}
        for factor, rs in by_size.items():
            per_k[factor] = [r.wall / lines[factor] * 1000 for r in rs]
            print(f"  {tool:<8} {factor}x {lines[factor]:6d} lines: wall {fmt(r.wall for r in rs)}; per 1000 lines "
                  f"{fmt(per_k[factor])}; max-rss {fmt((r.max_rss_mb for r in rs), ' MB', 0)}")
        growth[tool] = statistics.median(per_k[4]) / statistics.median(per_k[1])
        print(f"  {tool:<8} time per 1000 lines at 4x / at 1x: {growth[tool]:.2f} (1.00 = linear)")
        if tool == "now":
            table.append((f"6. large file {lines[1]}/{lines[2]}/{lines[4]} lines: s per 1000 lines",
                          " / ".join(f"{statistics.median(per_k[f]):.2f}" for f in (1, 2, 4)) +
                          f" (4x/1x {growth[tool]:.2f}); max-rss " +
                          " / ".join(f"{statistics.median(r.max_rss_mb for r in by_size[f]):.0f}" for f in (1, 2, 4)) +
                          " MB", "linear (4x/1x <= 1.3)", growth[tool] <= 1.3))
    for tool in list(tools)[1:]:
        for factor in sizes:
            rs = [old.wall / now.wall for old, now in zip(runs[tool][factor], runs["now"][factor])]
            print(f"  {factor}x: {tool} / now {fmt(rs, 'x')}")
        table.append((f"6. large file at 1x/2x/4x: {tool} / now (same repetition)",
                      " / ".join(f"{statistics.median(o.wall / n.wall for o, n in zip(runs[tool][f], runs['now'][f])):.2f}x"
                                 for f in sizes) + f"; 4x/1x per line {growth[tool]:.2f} then", "(faster now)", None))


def part_blocks(work, blocks, table):
    """6b. One file of N session blocks (benchmarks/session_blocks.py): CPU seconds at N, 2N, 4N."""
    import session_blocks

    header(f"6b. one file of {' / '.join(map(str, blocks))} session blocks, rewritten in process (CPU s)")
    folder = work / "blocks"
    folder.mkdir()
    times = {}
    for n in blocks:
        seconds, state = session_blocks.measure(n, 900.0, folder)
        times[n] = seconds
        print(f"  {n} blocks: {'-' if seconds is None else f'{seconds:.2f} s'} ({state})", flush=True)
    known = [times[n] for n in blocks if times[n]]
    ratios = [later / earlier for earlier, later in zip(known, known[1:])]
    shown = " / ".join("-" if times[n] is None else f"{times[n]:.1f}" for n in blocks)
    table.append((f"6b. {' / '.join(map(str, blocks))} session blocks: CPU s (ratio per doubling)",
                  shown + " s (" + ", ".join(f"x{r:.2f}" for r in ratios) + ")",
                  "linear (x2.0 per doubling)", bool(ratios) and max(ratios) <= 2.3))


def part_profile(work, template, top):
    header("profile: one `tf1gradfix rewrite -j 1` of every TF1 fixture, in process (cProfile)")
    from tf1gradfix.cli.main import main

    tree = fresh_copy(template, work, "profile_in")
    profiler = cProfile.Profile()
    sink = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(sink):
        profiler.enable()
        main(["rewrite", "--no-verify", "-j", "1", str(tree)])
        profiler.disable()
    wall = time.perf_counter() - start
    print(f"  {len(list(tree.rglob('*.py')))} files in {wall:.1f}s under the profiler")
    out = io.StringIO()
    st = pstats.Stats(profiler, stream=out)
    st.sort_stats("cumulative").print_stats(top)
    print("\n  -- top functions by cumulative time --")
    print(_trim(out.getvalue()))
    out.seek(0)
    out.truncate()
    st.print_stats(r"tf1gradfix[/\\](?!cli|batch)", top)
    print("  -- tf1gradfix's own functions by cumulative time --")
    print(_trim(out.getvalue()))
    out.seek(0)
    out.truncate()
    st.sort_stats("tottime").print_stats(10)
    print("  -- top functions by own time --")
    print(_trim(out.getvalue()))


def _trim(text):
    keep = [line.replace(str(ROOT) + "/", "").replace(str(Path(sys.prefix)) + "/lib/", "")
            for line in text.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(keep) if line.lstrip().startswith("ncalls")), 0)
    return "\n".join(["  " + line for line in keep[start:]])


# --------------------------------------------------------------------------- main

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run (a few minutes: TensorFlow starts several times)")
    parser.add_argument("--repeat", type=int, default=None, help="repetitions per figure (default 3; --quick 1)")
    parser.add_argument("--copies", type=int, default=None, help="varied copies of each TF1 fixture (default 5)")
    parser.add_argument("--plain", type=int, default=None, help="files without TensorFlow in the repository (default 2000)")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: same,repo,modern,cold,check,verify,pool,large,blocks,profile")
    parser.add_argument("--before", default=BEFORE_AST_CHECK, help="commit the corpus check is compared with")
    parser.add_argument("--large-before", default=None, metavar="REF",
                        help="also rewrite the large files (part 6) with the package at REF, for ratios in one run")
    args = parser.parse_args(argv)
    repeat = args.repeat or (1 if args.quick else 3)
    copies = args.copies or (1 if args.quick else 5)
    plain = args.plain if args.plain is not None else (200 if args.quick else 2000)
    skip = set(filter(None, args.skip.split(",")))
    for tool in (TF1GRADFIX, TF_UPGRADE):
        if not Path(tool).exists():
            sys.exit(f"missing {tool}: run `make install` first")

    started = time.time()
    load = os.getloadavg()
    print(f"tf1gradfix benchmarks  {time.strftime('%Y-%m-%d %H:%M %Z')}  python {platform.python_version()}  "
          f"{os.cpu_count()} cores  load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}  repeat {repeat}"
          f"{'  (quick)' if args.quick else ''}")
    table, findings = [], []
    with tempfile.TemporaryDirectory(prefix="tf1gradfix-bench-") as tmp:
        work = Path(tmp)
        same_runs = repo_runs = None
        template = None
        if "same" not in skip:
            same_runs, template = part_same_work(work, copies, repeat, table, findings)
        if "repo" not in skip:
            repo_runs = part_realistic(work, 1 if args.quick else 2, plain, repeat, table, findings)
        if "modern" not in skip:
            part_modern_syntax(work, findings)
        if "cold" not in skip:
            part_cold_start(work, max(7, repeat), table)
        if "check" not in skip:
            part_check_corpus(work, copies, repeat, args.before, table, findings)
        if "verify" not in skip:
            pairs = ["dev_linear_sgd/migrated"] if args.quick else ["dev_linear_sgd/migrated", "dev_adam_probe/migrated"]
            part_verify(work, pairs, 1 if args.quick else repeat, table, findings)
        if "pool" not in skip:
            part_pool(args.quick, table, findings)
        if same_runs and repo_runs:
            part_memory(same_runs, repo_runs, table)
        if "large" not in skip:
            part_large(work, 40 if args.quick else 200, repeat, table, findings, args.large_before)
        if "blocks" not in skip:
            part_blocks(work, [250, 500, 1000] if args.quick else [1000, 2000, 4000], table)
        if "profile" not in skip:
            profile_template = work / "profile_template"
            write_tree(profile_template, corpus.tf1_variants(1))
            part_profile(work, profile_template, 15)

    load = os.getloadavg()
    header(f"summary  ({time.time() - started:.0f}s; load now {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
           f"{os.cpu_count()} cores)")
    width = max(len(row[0]) for row in table) if table else 10
    vwidth = max(len(row[1]) for row in table) if table else 10
    print(f"{'figure':<{width}}  {'value':<{vwidth}}  {'goal':<22}  met")
    for name, value, goal, met in table:
        mark = "-" if met is None else ("yes" if met else "NO")
        print(f"{name:<{width}}  {value:<{vwidth}}  {goal:<22}  {mark}")
    if findings:
        print("\nfindings:")
        for finding in findings:
            print(f"  - {finding}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
