"""Write rules/keyword_renames.toml from TensorFlow's own upgrade tables.

    .venv/bin/python scripts/gen_keyword_renames.py            # rewrite the table
    .venv/bin/python scripts/gen_keyword_renames.py --check    # exit 1 if the shipped table differs

TensorFlow's tf_upgrade_v2 (tensorflow/tools/compatibility, shipped in the wheel) keeps
`function_keyword_renames`: the keywords TF1 functions took under old names (`dim`,
`keep_dims`, `reduction_indices`, ...). Each entry's reach is decided here by looking at
the installed functions' signatures, not assumed:

- `safe`: both the TF2 function and the `tf.compat.v1` one accept the new keyword, so a
  file that stays TF1 graph code keeps running (and provable) after the rename;
- `restructured`: only the TF2 function accepts it; the rename is written into
  restructured (TF2) programs, and reported with its replacement elsewhere.

An entry whose TF2 function does not accept the new keyword either is left out (and
counted on stderr): writing it would be a TypeError. So are functions the installed
`tf.compat.v1` lacks (tf.contrib): no program that runs calls them.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "rules" / "keyword_renames.toml"
HEADER = ("# Keyword renames of TF1 functions, from TensorFlow {version}'s tf_upgrade_v2\n"
          "# (function_keyword_renames), each with its reach decided from the installed signatures\n"
          "# (scripts/gen_keyword_renames.py; do not edit by hand):\n"
          "#   safe         = the TF2 and the tf.compat.v1 function both take the new keyword\n"
          "#   restructured = only TF2's takes it: written into restructured programs, reported elsewhere\n")


def _resolve(root, dotted: str):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _takes(function, keyword: str) -> bool:
    try:
        parameters = inspect.signature(inspect.unwrap(function)).parameters
    except (TypeError, ValueError):
        return False
    return keyword in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def build() -> tuple[str, int]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    import tensorflow.compat.v1 as v1
    from tensorflow.tools.compatibility import all_renames_v2, tf_upgrade_v2

    spec = tf_upgrade_v2.TFAPIChangeSpec()
    renames = all_renames_v2.symbol_renames
    lines, dropped = [HEADER.format(version=tf.__version__)], 0
    for name in sorted(spec.function_keyword_renames):
        tf2_name = renames.get(name, name).replace("tf.compat.v1.", "tf.")
        old = _resolve(v1, name[len("tf."):]) if name.startswith("tf.") else None
        new = _resolve(tf, tf2_name[len("tf."):]) if tf2_name.startswith("tf.") else None
        if old is None:   # (tf.contrib and other names this TensorFlow no longer has: nothing calls them)
            continue
        entries = []
        for before, after in sorted(spec.function_keyword_renames[name].items()):
            if new is None or not _takes(new, after):
                dropped += 1
                continue
            reach = "safe" if old is not None and _takes(old, after) else "restructured"
            entries.append(f'{before} = {{ to = "{after}", reach = "{reach}" }}')
        if entries:
            lines.append(f'\n["{name[len("tf."):]}"]\n' + "\n".join(entries) + "\n")
    return "".join(lines), dropped


def main(argv: list[str] | None = None) -> int:
    from table_cli import main as table_main   # (scripts/: on sys.path when run as a script)

    def tables():
        text, dropped = build()
        return {TABLE: text}, (f"{text.count(' = {')} keyword renames; {dropped} left out: "
                               "TF2's function does not take the new keyword")
    return table_main(__doc__.splitlines()[0], tables, argv)


if __name__ == "__main__":
    sys.exit(main())
