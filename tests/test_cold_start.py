"""What a cold `tf1gradfix check FILE` of a TF1 program imports: only what the check uses.

Each module named here cost the start-up milliseconds (benchmarks/run.py, part 3) and
is needed by other runs only: a regression shows here, not just in the benchmark.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "fixtures" / "verify" / "dev_linear_sgd" / "original.py"

# module -> why a check of a .py file must not need it
NOT_IMPORTED = {
    "dataclasses": "records.py replaces it on the check path (it imports inspect, and compiles each class)",
    "inspect": "imported by dataclasses alone",
    "hashlib": "a file's digest guards a write, and the check cache is off here",
    "json": "notebooks, the cache and the JSON formats only",
    "tempfile": "writes only (files, cache entries)",
    "configparser": "only a setup.cfg that names tf1gradfix",
    "threading": "the process pool only",
    "shutil": "argparse finds the terminal's width with it; cli/main.py's formatter does not",
    "tokenize": "a plain UTF-8 file has no encoding declaration to read (source_io.plain_utf8)",
    "pickle": "the kept rule tables are read by the C unpickler alone (rules/compiled.py)",
}


def _imported(tmp_path, *args, env=None):
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "tf1gradfix", "check", *args],
                         capture_output=True, text=True, cwd=tmp_path,
                         env=dict(os.environ, TF1GRADFIX_NO_CACHE="1", **(env or {})))
    assert out.returncode == 1 and "TFG1" in out.stdout, out.stderr[-2000:]   # (findings were reported)
    return {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}


def test_a_cold_check_imports_only_what_it_uses(tmp_path):
    _imported(tmp_path, str(PROGRAM))   # the first run after a table changed keeps the tables (rules/compiled.py)
    imported = _imported(tmp_path, str(PROGRAM))
    assert "tf1gradfix.detect.ast_rules" in imported
    assert not {name: why for name, why in NOT_IMPORTED.items() if name in imported}


def _printed(parser, argv, capsys) -> tuple[str, str]:
    try:
        parser.parse_args(argv)
    except SystemExit:
        pass
    return capsys.readouterr()


def test_the_parser_of_one_command_prints_what_the_whole_one_does(capsys, monkeypatch):
    from tf1gradfix.cli.main import COMMANDS, build_parser

    monkeypatch.setenv("COLUMNS", "71")
    for name, _, _ in COMMANDS:
        for argv in ([name, "--help"], [name, "--bogus"], [name, "--format"]):
            whole = _printed(build_parser(), argv, capsys)
            assert whole.out.startswith(f"usage: tf1gradfix {name}") or "usage: tf1gradfix" in whole.err
            assert _printed(build_parser(only=name), argv, capsys) == whole, argv


def test_a_pattern_matches_a_name_as_fnmatch_says():
    import fnmatch

    from tf1gradfix.rules.catalog import load, matches

    catalog = load()
    patterns = [p for p, _ in catalog.glob_symbols] + [p for ps in catalog.kinds.values() for p in ps]
    patterns += ["tensorflow.[ab]x", "tensorflow.?", "*", "a*b*c", "tensorflow"]
    names = sorted(catalog.exact_symbols)[:200] + ["tensorflow.train.AdamOptimizer", "tensorflow.train.Optimizer",
                                                    "tensorflow.ax", "tensorflow.c", "tensorflow", "", "abc", "a.b.c"]
    assert any("*" in p for p in patterns)
    for pattern in patterns:
        for name in names + [pattern]:
            assert matches(name, pattern) == fnmatch.fnmatchcase(name, pattern), (name, pattern)


def test_the_kept_prefilter_shares_the_kept_catalog():
    import pickle

    from tf1gradfix.detect import prefilter
    from tf1gradfix.rules import catalog

    kept = pickle.dumps(prefilter.load())
    assert b"explanation" not in kept   # (a rule's fields: the catalog is not in it)
    assert pickle.loads(kept)._catalog is catalog.load()


DECLARED = [b"", b"x = 1\n", b"\xef\xbb\xbfx = 1\n", b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
            b"\n# coding=utf-8\nx = 1\n", b"x = 1\n# coding: latin-1\n", b"x = 1\n\n# coding: latin-1\n",
            b"# vim: set fileencoding=bogus :\n", b"x = '\xe9'\n", b"\n\nx = '\xe9'\n", b"s = '\xc3\xa9'\r\n",
            b"x = 1\r# coding: latin-1\r", b"#!/usr/bin/env python\n# coding: ascii\nx = '\xc3\xa9'\n",
            b"print('coding')\n", b"\xef\xbb\xbf# coding: latin-1\n", b"x = '\xed\xa0\x80'\n"]


def test_plain_utf8_is_what_the_tokenizer_decodes_as_utf8():
    """A file taken for plain UTF-8 is read as the tokenizer reads it; every other file still goes to it."""
    import io
    import tokenize

    from tf1gradfix.run.source_io import decode_error, plain_utf8

    assert plain_utf8(b"x = '\xc3\xa9'\n") and not plain_utf8(b"\xef\xbb\xbfx = 1\n")
    for data in DECLARED:
        if plain_utf8(data):
            assert tokenize.detect_encoding(io.BytesIO(data).readline)[0] == "utf-8", data
            assert data.decode("utf-8") is not None and decode_error("f.py", data) is None
