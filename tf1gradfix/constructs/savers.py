"""`saver = tf.train.Saver()` and `saver.save(sess, path)`: a `tf.train.Checkpoint`
over the same state, written to the same path.

TF1's Saver, made without arguments (or given `tf.global_variables()`, the list it takes
when given none), checkpoints every global variable that
exists when it is made: the variables, the layers' weights, and the slots of
the optimizers whose train ops came before it. The TF2 checkpoint names the
same objects (`tf.train.Checkpoint(w=w, dense=dense, optimizer=optimizer)`),
and `saver.save(sess, path)` becomes `saver.write(path)`, which writes the
files under that prefix (`PATH.index`, `PATH.data-*`) and returns it, as `save`
did; the `PATH.meta` graph and the `checkpoint` list TF1 also wrote are not
written (TF2 has no graph to export).

`saver.restore(sess, path)` of a Saver of variables reads what TF1 wrote: the
Saver becomes a function `saver_restore(path)` assigning each variable the
value the checkpoint keeps under the variable's TF1 name (`tf.train.load_checkpoint`),
and a name the checkpoint lacks raises, as TF1's restore did: no variable is
skipped. The proof restores the same checkpoint on both sides and compares
every value. Layers' weights and optimizer slots (other than none: gradient
descent) are named otherwise by TF2, and a Saver that saves (object-based) and
restores (by TF1's names) in one program could not read its own checkpoints:
both refused.
"""

from __future__ import annotations

import json

import libcst as cst

from tf1gradfix.cst.syntax import Refusal, arg, bound_names, graph_ops, loads
from tf1gradfix.cst.layout import fit
from tf1gradfix.cst.walk import walk
from tf1gradfix.model.nodes import (Layer, LayerNode, Optimizer, OptimizerCall, Saver, Statement,
                                    Variable, VariableGroup)

SYMBOL = "tensorflow.train.Saver"
# attributes of tf.train.Checkpoint a saved object's name must not take
_RESERVED = frozenset({"save", "write", "read", "restore", "save_counter", "sync", "root"})


def build(builder, s: Statement) -> bool:
    """A `Saver` for `saver = tf.train.Saver()`; False if the statement is not one."""
    if s.q != SYMBOL or s.one is None or s.call is None:
        return False
    settings = {a.keyword.value: a.value for a in s.call.args if a.keyword is not None and a.keyword.value in KEPT}
    given = [a for a in s.call.args if not (a.keyword is not None and a.keyword.value in KEPT)]
    if given and not (len(given) == 1 and _default_var_list(builder, given[0])):
        raise Refusal.of(s.call, "saver_form", what="arguments (which variables, how many files to keep)")
    for value in settings.values():
        if any(isinstance(n, cst.Call) for n in walk(value)) or set(loads(value)) & set(builder.program.final):
            raise Refusal.of(value, "saver_form", what="a number of files to keep computed by a call or from graph values")
    members = []
    for node in builder.program.nodes:
        if isinstance(node, LayerNode) and not isinstance(node, Layer):
            raise Refusal.of(s.call, "saver_form", what=f"the weights of `{node.names[0] if node.names else 'a builder'}`")
        if holds(builder.program, node):
            members.append(node.index)
    builder.add(s.item, Saver, (s.one,), s.value, s.deps, members=members, keep=settings.get("max_to_keep"),
                hours=settings.get("keep_checkpoint_every_n_hours"), os_alias=_os_alias(builder.module))
    return True


# `tf.train.Saver` settings `tf.train.CheckpointManager` takes under the same names
KEPT = ("max_to_keep", "keep_checkpoint_every_n_hours")


def _os_alias(module: cst.Module) -> str | None:
    """The name a module-level `import os [as NAME]` binds, if there is one."""
    for stmt in module.body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            for alias in small.names if isinstance(small, cst.Import) else ():
                if isinstance(alias.name, cst.Name) and alias.name.value == "os":
                    return cst.ensure_type(alias.asname.name, cst.Name).value if alias.asname else "os"
    return None


def _default_var_list(builder, given: cst.Arg) -> bool:
    """`tf.train.Saver(tf.global_variables())` (or `var_list=`, `tf.all_variables()`): the
    list TF1's Saver takes when given none, every global variable made so far."""
    value = given.value
    return not given.star and (given.keyword is None or given.keyword.value == "var_list") \
        and isinstance(value, cst.Call) and not value.args \
        and graph_ops()["variable_collections"].get(builder.qualified(value.func) or "") == "global"


def made_after_runs(node) -> bool:
    """May `node` be made after the graph ran? A Saver computes nothing: made after the
    runs it lists the variables made before them (graph code after a run is refused, and
    host code makes none), so its checkpoint is the same as if it came before them."""
    return isinstance(node, Saver)


def holds(program, node) -> bool:
    """Does a Saver made now (no arguments) checkpoint `node`, and a session keep its values: a
    variable, a group of them, a layer's weights, an optimizer whose train op made its slots?"""
    if isinstance(node, Optimizer):
        return has_slots(program, node)
    return isinstance(node, Variable) and node.alias_of is None or isinstance(node, (VariableGroup, LayerNode))


def has_slots(program, opt: Optimizer) -> bool:
    """Has a train op of `opt` (`minimize`, `apply_gradients`) been made, and with it its slot variables?"""
    return any(isinstance(n, OptimizerCall) and n.method != "compute_gradients" and n.optimizer == opt.index
               for n in program.nodes)


def checkpoint_text(node: Saver, program, tf: str, names) -> str:
    """`tf.train.Checkpoint(...)` over the saver's members; `names(member)`: the name
    the emitted program gives it (a layer's instance, an optimizer made in place)."""
    parts = []
    for i in node.members:
        name = names(program.nodes[i])
        key = name.lstrip("_") or "saved"
        key = f"{key}_" if key in _RESERVED else key   # (a label in the checkpoint; Checkpoint keeps these names)
        parts.append(f"{key}={name}")
    return f"{node.names[0]} = {tf}.train.Checkpoint({', '.join(parts)})"


def restore_text(program, node: Saver, saver: str, call: cst.Call, sessions, graph_names, code) -> str:
    """`saver_restore(path)` for `saver.restore(sess, path)` (restorer_text): each variable
    the Saver holds assigned the value the checkpoint keeps under its TF1 name; in a
    program that also saves with it, a checkpoint it wrote itself read back whole. A
    Saver that only restores holds variables only: TF2's layers and optimizers name their
    weights and slots otherwise than the checkpoint TF1 wrote."""
    path = _path_of(call, "restore", sessions, graph_names)
    order = [c for c in walk(program.owner) if c is call or type(c) is cst.Call and isinstance(c.func, cst.Attribute)
             and c.func.attr.value == "save" and isinstance(c.func.value, cst.Name) and c.func.value.value == saver]
    node.own = node.own or len(order) > 1
    # (a restore of layers or slots reads a checkpoint the program wrote before it: one TF1 wrote has other names)
    if order[0] is call and not _by_name(program, node):
        raise Refusal.of(call, "saver_form", what="a restore of layers' weights or optimizer slots (TF2 names them "
                                                  "otherwise than the checkpoint TF1 wrote)")
    if f"{saver}_restore" in {n for stmt in walk(program.owner) if isinstance(stmt, cst.BaseStatement)
                              for n in bound_names(stmt)}:
        raise Refusal.of(call, "saver_form", what=f"a restore where `{saver}_restore` is taken")
    node.restores = True
    return f"{saver}_restore({code(path)})"


def _by_name(program, node: Saver) -> bool:
    """Does every member read by its TF1 name (variables; an optimizer without slots adds none)?"""
    return all(isinstance(m, Variable) and m.full_name is not None
               for m in (program.nodes[i] for i in node.members) if not slotless(m))


def restorer_text(node: Saver, program, tf: str) -> str:
    """The function `saver.restore` becomes: TF1's checkpoint read by the names TF1 saved
    each variable under; a name the checkpoint lacks raises (NotFoundError), as TF1's
    restore did, so no variable is ever skipped. In a program that saves with the Saver
    too, a checkpoint it wrote (object-based: it has an object graph) is read back whole,
    every existing object matched or an error raised; a TF1 checkpoint there is read by
    name where every member has one, and refused by an error where not."""
    members = [m for m in (program.nodes[i] for i in node.members) if not slotless(m)]
    saver = node.names[0]
    lines = [f"def {saver}_restore(path):"]
    if node.own:
        lines += ['    """Restores `path`: a checkpoint this program wrote, or one TF1 wrote."""',
                  f"    checkpoint = {tf}.train.load_checkpoint(path)",
                  '    if checkpoint.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):  # one this program wrote',
                  f"        {saver}.read(path).assert_existing_objects_matched()",
                  "        return"]
    else:
        lines += [f'    """Restores {", ".join(m.names[0] for m in members)} from the TF1 checkpoint `path`, '
                  'by the names TF1 saved them under."""',
                  f"    checkpoint = {tf}.train.load_checkpoint(path)"]
    if _by_name(program, node):
        lines += [f"    {m.names[0]}.assign(checkpoint.get_tensor({json.dumps(m.full_name)}))" for m in members]
    else:
        lines.append('    raise ValueError(f"{path}: TF1\'s names, not this program\'s layers and slots")')
    return "\n".join(lines)


def slotless(node) -> bool:
    """An optimizer TF1 checkpointed nothing of: plain gradient descent has no slots."""
    return isinstance(node, Optimizer) and node.cls.rsplit(".", 1)[-1] == "GradientDescentOptimizer"


def save_text(node: Saver, saver: str, call: cst.Call, sessions, graph_names, code, taken, program,
              attributes: dict[str, str], in_place: bool = False) -> str:
    """`saver.write(path)` for `saver.save(sess, path)`; `SAVER_save(path, step)` for a save
    numbered by `global_step=` (numbered_text), the step a host value or a variable (TF2 keeps
    it as a `tf.Variable`; a tensor is gone). `taken`: the names bound in the program;
    `attributes`: a model class's attribute -> graph name; `in_place`: `saver` is the code of a
    model class's attribute (`model.saver`), whose numbered save is written in place."""
    step = arg(call, 2, "global_step")
    if step is None:
        return f"{saver}.write({code(_path_of(call, 'save', sessions, graph_names))})"
    held = [name for name in loads(step) if name in graph_names] + [
        attributes[a.attr.value] for a in walk(step) if type(a) is cst.Attribute and a.attr.value in attributes]
    if any(not isinstance(program.node(name), Variable) for name in held):
        raise Refusal.of(step, "saver_form", what="a step computed from graph values other than a variable")
    bare = call.with_changes(args=[a for a in call.args if a.value is not step])
    path = _path_of(bare, "save", sessions, graph_names)
    if node.os_alias is None:
        raise Refusal.of(call, "saver_form", what="a save numbered by `global_step=` in a module that does not "
                                                  "`import os` (its path is split into folder and name)")
    if in_place:
        if not isinstance(path, (cst.Name, cst.Attribute)):
            raise Refusal.of(path, "saver_form", what="a numbered save of a model class's Saver to a path that is "
                                                      "not a name (it is read twice: folder and file name)")
        return _manager(node, saver, program.tf_alias, code(path)) + f".save(checkpoint_number={code(step)})"
    if f"{saver}_save" in taken:
        raise Refusal.of(call, "saver_form", what=f"a numbered save where `{saver}_save` is taken")
    node.numbered = True
    return f"{saver}_save({code(path)}, {code(step)})"


def _manager(node: Saver, saver: str, tf: str, path: str) -> str:
    """The `tf.train.CheckpointManager` of a numbered save to `path`, as numbered_text makes it."""
    keep, hours = _kept(node)
    os_ = node.os_alias
    return f"{tf}.train.CheckpointManager({saver}, {os_}.path.dirname({path}), max_to_keep={keep}{hours}, " \
           f"checkpoint_name={os_}.path.basename({path}))"


def _kept(node: Saver) -> tuple[str, str]:
    """(`max_to_keep`: 5 when not given, None for every file (None or 0), the
    `keep_checkpoint_every_n_hours=` argument or "")."""
    code = cst.Module([]).code_for_node
    keep = "5" if node.keep is None else code(node.keep) if isinstance(node.keep, cst.Integer) \
        and int(node.keep.value) > 0 else f"{code(node.keep)} or None"
    return keep, "" if node.hours is None else f", keep_checkpoint_every_n_hours={code(node.hours)}"


def numbered_text(node: Saver, tf: str, indent: int) -> str:
    """The function a save numbered by `global_step=` calls: TF1's Saver wrote the files
    `PATH-STEP`, listed them in the `checkpoint` file of their folder (what
    `tf.train.latest_checkpoint` reads) and deleted the oldest beyond `max_to_keep` (5 when
    not given, every file kept for None or 0); `tf.train.CheckpointManager` does the same,
    recovering that list from the `checkpoint` file at each save. `indent`: the def's column."""
    saver, os_ = node.names[0], node.os_alias
    keep, hours = _kept(node)
    kept = f"the newest {keep} kept" if keep.isdigit() else "the newest `max_to_keep` kept"
    return "\n".join([
        f"def {saver}_save(path, global_step):",
        '    """TF1\'s numbered save: the files `path-N` for the step N, listed in the',
        " " * (indent + 4) + f'`checkpoint` file of their folder, {kept}."""',
        f"    folder, name = {os_}.path.split(path)",
        "    " + fit(f"files = {tf}.train.CheckpointManager({saver}, folder, max_to_keep={keep}{hours}, "
                    "checkpoint_name=name)", indent + 4).replace("\n", "\n    "),
        "    return files.save(checkpoint_number=global_step)"])


def _path_of(call: cst.Call, method: str, sessions, graph_names) -> cst.BaseExpression:
    """The path of `saver.save(sess, path)` or `saver.restore(sess, path)`: a session of the
    program and a path of host values, nothing else."""
    sess, path = arg(call, 0, "sess"), arg(call, 1, "save_path")
    given = {a.keyword.value for a in call.args if a.keyword is not None}
    if not (isinstance(sess, cst.Name) and sess.value in sessions) or path is None or len(call.args) != 2 \
            or given - {"sess", "save_path"}:
        raise Refusal.of(call, "saver_form", what=f"a {method} other than `{method}(sess, path)`")
    if set(loads(path)) & graph_names:
        raise Refusal.of(path, "saver_form", what="a path computed from graph values")
    return path
