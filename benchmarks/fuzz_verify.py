"""Differential fuzzing with the verifier as oracle: generate, rewrite, verify.

Each generated TF1 program (fuzz_programs.generate) is rewritten in process
by the real rewrite and the pair is run by the real verifier. A DIVERGED or
MIGRATED_FAILED pair is a wrong program the rewrite wrote; ORIGINAL_FAILED
means the generator made a bad program (counted apart).

    .venv/bin/python benchmarks/fuzz_verify.py --count 150 --seed 0 [--out DIR] [--save-regressions]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_programs import generate  # noqa: E402

BAD = ("DIVERGED", "MIGRATED_FAILED")


def run_one(seed: int, work: Path, steps: int | None = None) -> dict:
    """Generate, rewrite and verify one program; returns its record."""
    from tf1gradfix.run.engine import process_source
    from tf1gradfix.run.findings import CodeFilter
    from tf1gradfix.verify.orchestrate import verify_pair

    source, tags = generate(seed)
    folder = work / f"seed_{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    original = folder / "original.py"
    original.write_text(source)
    t0 = time.monotonic()
    result = process_source(str(original), source.encode(), CodeFilter())
    from tf1gradfix.run.findings import blocking_codes

    refusals = [f"{f.code} {f.message}" for f in result.findings if f.code in blocking_codes()]
    rec = dict(seed=seed, tags=tags, refusals=refusals, verdict="", reason="",
               error=result.error.message if result.error is not None else "")
    if result.new_source is None:
        rec["status"] = "refused" if refusals or result.error else "unchanged"
        rec["time"] = time.monotonic() - t0
        return rec
    rec["status"] = "rewritten"
    migrated = folder / "migrated.py"
    migrated.write_bytes(result.new_source)
    res = verify_pair(original, migrated, steps=steps)
    rec.update(verdict=res.verdict, reason=res.reason, time=time.monotonic() - t0)
    return rec


def save_bad(rec: dict, work: Path, out: Path) -> None:
    folder = work / f"seed_{rec['seed']}"
    dest = out / f"seed_{rec['seed']}_{rec['verdict'].lower()}"
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("original.py", "migrated.py"):
        (dest / name).write_bytes((folder / name).read_bytes())
    (dest / "reason.txt").write_text(f"{rec['verdict']}: {rec['reason']}\ntags: {', '.join(rec['tags'])}\n")


def save_regression(rec: dict, work: Path) -> Path:
    dest = ROOT / "fixtures" / "fuzz_regressions" / f"verify_seed_{rec['seed']}.py"
    dest.write_bytes((work / f"seed_{rec['seed']}" / "original.py").read_bytes())
    return dest


def report(records: list[dict], elapsed: float) -> str:
    n = len(records)
    status = collections.Counter(r["status"] for r in records)
    verdicts = collections.Counter(r["verdict"] for r in records if r["verdict"])
    reasons = collections.Counter(r["refusals"][0].split(" (")[0][:90] if r["refusals"] else (r["error"] or "?")[:90]
                                  for r in records if r["status"] == "refused")
    share = 100.0 * status["refused"] / n if n else 0.0
    lines = [f"{'generated':<36}{n}",
             f"{'rewritten (restructured)':<36}{status['rewritten']}",
             f"{'refused':<36}{status['refused']} ({share:.0f}%)",
             f"{'unchanged (no rewrite, no refusal)':<36}{status['unchanged']}"]
    for v in ("EQUIVALENT", "DIVERGED", "MIGRATED_FAILED", "ORIGINAL_FAILED", "NOT_COMPARABLE"):
        label = v + (" (generator bugs)" if v == "ORIGINAL_FAILED" else "")
        lines.append(f"{label:<36}{verdicts[v]}")
    lines.append(f"{'time per program':<36}{elapsed / n if n else 0:.2f} s ({elapsed:.0f} s total)")
    if reasons:
        lines.append("top refusal reasons:")
        lines += [f"  {count:>4}  {reason}" for reason, count in reasons.most_common(6)]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0, help="first seed; program i uses seed+i")
    ap.add_argument("--jobs", type=int, default=1, help="only 1 is supported (the warm pool is per process)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/tf1gradfix-fuzz"))
    ap.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                    help="start no new program after this many seconds")
    ap.add_argument("--steps", type=int, default=None, help="verify only this many training steps")
    ap.add_argument("--save-regressions", action="store_true",
                    help="copy the originals of DIVERGED/MIGRATED_FAILED pairs to fixtures/fuzz_regressions/")
    args = ap.parse_args(argv)
    if args.count < 1 or args.jobs != 1:
        print("fuzz_verify: --count must be at least 1 and --jobs 1", file=sys.stderr)
        return 2
    work = args.out / "work"
    work.mkdir(parents=True, exist_ok=True)
    records, t0 = [], time.monotonic()
    try:
        _campaign(args, work, records, t0)
    except (KeyboardInterrupt, SystemExit):   # Ctrl-C (the verifier turns it into SystemExit): report what was done
        print(f"interrupted after {len(records)} programs", flush=True)
    print(report(records, time.monotonic() - t0))
    return 0


def _campaign(args, work: Path, records: list, t0: float) -> None:
    log = (args.out / "records.jsonl").open("w")
    for i in range(args.count):
        if args.budget is not None and time.monotonic() - t0 > args.budget:
            print(f"time budget of {args.budget:g} s spent after {i} programs", flush=True)
            break
        rec = run_one(args.seed + i, work, args.steps)
        log.write(json.dumps(rec) + "\n")
        log.flush()
        records.append(rec)
        what = rec["verdict"] or rec["status"]
        extra = rec["reason"] if rec["verdict"] not in ("EQUIVALENT", "") else (rec["refusals"][:1] or [""])[0]
        print(f"[{i + 1}/{args.count}] seed {rec['seed']}: {what} {rec.get('time', 0):.1f}s {extra[:120]}", flush=True)
        if rec["verdict"] in BAD or rec["verdict"] == "ORIGINAL_FAILED":
            save_bad(rec, work, args.out)
            if args.save_regressions and rec["verdict"] in BAD:
                print(f"    saved {save_regression(rec, work).relative_to(ROOT)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
