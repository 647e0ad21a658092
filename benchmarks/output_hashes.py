"""Fingerprint of everything the rewrite produces, to prove a refactoring changed nothing.

For every fixture source, every bench corpus file (tf1 variants, plain
modules, modern syntax, a large file) and, with --corpus DIR, every Python
file under DIR, the rewrite runs in process and the SHA-256 of its new
source and of its findings (code, line, column, message, safety, fixed) is recorded.

    .venv/bin/python benchmarks/output_hashes.py --write before.json [--corpus DIR]
    .venv/bin/python benchmarks/output_hashes.py --compare before.json [--corpus DIR]

--compare prints every file whose output or findings differ and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402


def sources(extra: Path | None) -> list[tuple[str, bytes]]:
    items = [(str(p.relative_to(ROOT)), p.read_bytes()) for p in sorted((ROOT / "fixtures").rglob("*.py"))]
    items += [(f"variant/{name}", text.encode()) for name, text in corpus.tf1_variants(3, seed=1)]
    rng = random.Random(7)
    items += [(f"plain/{i}.py", corpus.plain_module(i, rng).encode()) for i in range(20)]
    items += [(f"modern/{name}.py", text.encode()) for name, text in sorted(corpus.MODERN_SYNTAX.items())]
    items.append(("large.py", corpus.large_tf1_file(12).encode()))
    if extra is not None:
        items += [(f"corpus/{p.relative_to(extra)}", p.read_bytes()) for p in sorted(extra.rglob("*.py"))]
    return items


def fingerprint(display: str, data: bytes) -> dict:
    from tf1gradfix.run.engine import process_source
    from tf1gradfix.run.findings import CodeFilter

    result = process_source(display, data, CodeFilter())
    findings = [[f.code, f.line, f.col, f.message, f.safety, f.fixed] for f in result.findings]
    error = result.error.message if result.error is not None else None
    return {"source": None if result.new_source is None else hashlib.sha256(result.new_source).hexdigest(),
            "findings": hashlib.sha256(json.dumps(findings).encode()).hexdigest(),
            "messages": [f"{f[0]} {f[3]}" for f in findings], "error": error}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", type=Path)
    mode.add_argument("--compare", type=Path)
    parser.add_argument("--corpus", type=Path)
    args = parser.parse_args(argv)
    table = {name: fingerprint(name, data) for name, data in sources(args.corpus)}
    changed_sources = sum(1 for v in table.values() if v["source"] is not None)
    if args.write:
        args.write.write_text(json.dumps(table, indent=1, sort_keys=True))
        print(f"{len(table)} files fingerprinted ({changed_sources} rewritten) -> {args.write}")
        return 0
    before = json.loads(args.compare.read_text())
    differ = []
    for name in sorted(set(before) | set(table)):
        old, new = before.get(name), table.get(name)
        if old is None or new is None or old["source"] != new["source"] or old["error"] != new["error"]:
            differ.append(f"output  {name}")
        elif old["findings"] != new["findings"]:
            gone = sorted(set(old["messages"]) - set(new["messages"]))
            added = sorted(set(new["messages"]) - set(old["messages"]))
            differ.append(f"findings {name}: -{gone} +{added}")
    print(f"{len(table)} files, {changed_sources} rewritten: "
          f"{len(table) - len(differ)} identical, {len(differ)} differ")
    for line in differ:
        print("  " + line)
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
