"""contrib's variance-scaling initializers (`xavier_initializer`,
`variance_scaling_initializer`) as Keras initializers with the same draw, and the
imports of contrib's modules a rewritten program no longer reads.

contrib names its modes in upper case and picks the distribution with a bool;
its normal is truncated with stddev sqrt(1.3 * factor / n), which Keras's
truncated normal gives with `scale = factor * 1.3 * 0.87962566103423978**2`
(the derivation is in rules/contrib.toml). Any argument whose value
is not written as a literal the table knows is refused: the draw would depend on it."""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, bound_args, literal_string, name_nodes
from tf1gradfix.rules import contrib


def initializer_row(qualified: str | None) -> dict | None:
    """The contrib.toml row of an initializer the rewrite maps, or None."""
    if not qualified or not qualified.startswith("tensorflow.contrib."):
        return None
    row = contrib.table()["symbol"].get(qualified)
    return row if row is not None and row.get("rewrite") == "initializer" else None


def initializer(init: cst.Call, row: dict, code, tf: str) -> tuple[str, cst.BaseExpression | None]:
    """(Keras initializer text, the dtype the call named) for a contrib initializer call."""
    spec = contrib.table()["variance_scaling"]
    bound = bound_args(init, row["params"], init)
    unknown = sorted(set(bound) - set(row["params"]))
    if unknown:
        raise Refusal.of(init, "contrib_initializer_arguments", args=", ".join(unknown))
    args = {**row["defaults"], **row["fixed"], **{k: code(v) for k, v in bound.items() if k not in ("dtype", "seed")}}
    mode_node = bound.get("mode")
    mode = literal_string(mode_node) if mode_node is not None else literal_string(cst.parse_expression(args["mode"]))
    if mode not in spec["modes"]:
        raise Refusal.of(init, "contrib_initializer_mode", mode=args["mode"],
                         modes=", ".join(repr(m) for m in spec["modes"]))
    if args["uniform"] not in ("True", "False"):
        raise Refusal.of(init, "contrib_initializer_uniform", uniform=args["uniform"])
    keras_mode, factor = spec["modes"][mode], args["factor"]
    seed = f"seed={code(bound['seed'])}" if "seed" in bound else None
    if args["uniform"] == "True":
        named = spec["named_uniform"].get(f"{factor} {keras_mode}")
        if named is not None:
            return f"{tf}.{named}({seed or ''})", bound.get("dtype")
        settings = [f"scale={factor}", f'mode="{keras_mode}"', 'distribution="uniform"']
    else:
        number = factor.replace(".", "", 1).isdigit()
        scale = spec["normal_scale"] if factor == "1.0" else f"{factor if number else f'({factor})'} * {spec['normal_scale']}"
        settings = [f"scale={scale}", f'mode="{keras_mode}"', 'distribution="truncated_normal"']
    return f"{tf}.{spec['target']}({', '.join(settings + ([seed] if seed else []))})", bound.get("dtype")


def without_unread_imports(module: cst.Module) -> cst.Module:
    """`module` without its top-level imports of contrib's modules by name (`from
    tensorflow.contrib import rnn`) that nothing reads any more: the rewrite wrote their
    pieces in TF2 terms, and TF2 has no `tensorflow.contrib` to import."""
    read = {n.value for stmt in module.body for n in name_nodes(stmt)
            if not (isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, cst.ImportFrom) for s in stmt.body))}
    kept = []
    for stmt in module.body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if isinstance(small, cst.ImportFrom) and small.module is not None and not isinstance(small.names, cst.ImportStar) \
                and module.code_for_node(small.module).startswith("tensorflow.contrib") \
                and not {cast(cst.Name, a.asname.name if a.asname else a.name).value for a in small.names} & read:
            continue
        kept.append(stmt)
    return module if len(kept) == len(module.body) else module.with_changes(body=kept)
