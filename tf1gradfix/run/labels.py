"""A finding's fix label and note in this file, and the TFG402 findings labelled the same way.

A rule's label is its own unless the file's fate changes it: a restructured file
turns a manual rule's finding it removes into one fixable with proof, a file no
restructuring reaches turns a finding only a restructuring fixes into a manual
one, and a rename the file cannot take while it stays TF1 is said so.
"""

from __future__ import annotations

from tf1gradfix.run.findings import CodeFilter, Finding


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
        symbol, instead = api_surface.advised(m.chain or m.name, m.name)
        message = rule.message.format(symbol=f"tf.{symbol}", advice=instead)
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
