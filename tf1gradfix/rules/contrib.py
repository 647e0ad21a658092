"""The tf.contrib table (contrib.toml): what each contrib symbol becomes in TF2.

`check` names a row's TF2 form in TFG901; the rewrite reads its layer rows
(tf1gradfix/constructs/layers.py) and initializer rows
(tf1gradfix/constructs/contrib.py)."""

from __future__ import annotations

import functools

from tf1gradfix.rules.catalog import _read


@functools.lru_cache(maxsize=None)
def table() -> dict:
    return _read("contrib.toml")


def row(qualified: str) -> dict | None:
    """The row of a normalized `tensorflow.contrib...` name, or of its nearest listed module."""
    symbols = table()["symbol"]
    parts = qualified.split(".")
    for depth in range(len(parts), 2, -1):
        hit = symbols.get(".".join(parts[:depth]))
        if hit is not None:
            return hit
    return None


def advice(qualified: str) -> str:
    """TFG901's advice for a contrib name: its row's TF2 form, else the general advice."""
    hit = row(qualified)
    return hit["tf2"] if hit is not None else table()["advice"]


def layer_rows() -> dict[str, dict]:
    """Contrib layers in the format of layers.toml."""
    return {symbol: dict(r) for symbol, r in table().get("layer", {}).items()}


def variable_aliases() -> dict[str, list[str]]:
    """Keras variable name -> the names contrib layers give the same weight (`kernel` -> `weights`),
    for the verifier, which gives each migrated variable the original's initial value by name."""
    pairs = {(keras, tf1) for r in table().get("layer", {}).values() if isinstance(r.get("variables"), dict)
             for keras, tf1 in r["variables"].items()}
    return {keras: sorted(tf1 for k, tf1 in pairs if k == keras) for keras, _ in pairs}
