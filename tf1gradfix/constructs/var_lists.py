"""Which variables a TF1 variable list names, read statically.

`var_list=` and the lists handed to optimizers come from collections
(`tf.trainable_variables(scope)`, `tf.get_collection(KEY, scope)`,
`tf.global_variables()`), from explicit lists, from sums of lists and from
comprehensions that filter a collection by variable name. TF1 lists a
collection in creation order and selects a scope by `re.match` on the
variable's name; `v.name` carries the output suffix `:0`. The collections
and keys are tables in `rules/graph_ops.toml`.

A list is typed entries (`Listed`), not text: a loop's variables are lists the
emitter names (variable_loops), so an entry of a loop is its site and iteration,
under that iteration's TF1 name, and its text is written at emit time
(graph_collections.list_text).
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from tf1gradfix.constructs import builders, cell_collections, layer_methods, layers as layer_rows, slot_names
from tf1gradfix.cst.syntax import Refusal, arg, graph_ops, literal_bool, literal_string, matches
from tf1gradfix.model.nodes import (BuilderModule, Layer, LayerLoop, OptimizerCall, Optimizer, RnnCell, Statement,
                                    TrainOp, Variable, VariableGroup, VarList)
from tf1gradfix.model.parts import Bound, LayerSite, Listed, VariableSite

_REGEX = set(".^$*+?{}[]\\|()")


def members(program, expr: cst.BaseExpression, before: int, qualified, layers: bool = False) -> list[Listed] | None:
    """The variables `expr` lists at node index `before` (their text is written where the
    emitter named the lists of loops: list_text), or None when `expr` is not a variable
    list; Refusal when it is one that cannot be read. `layers`: a list graph code reads
    (a `var_list=`, a list a graph statement binds), where the weights of `tf.layers`
    layers made before are listed too (each run must call them first: check_listed)."""
    if isinstance(expr, cst.Name):
        node = program.node(expr.value)
        if isinstance(node, VarList):
            return list(node.members)
        return None
    if isinstance(expr, (cst.List, cst.Tuple)):
        out = []
        for e in expr.elements:
            if isinstance(e, cst.StarredElement):
                inner = members(program, e.value, before, qualified, layers)
                if inner is None:
                    return None
                out += inner
                continue
            node = program.node(e.value.value) if isinstance(e.value, cst.Name) else None
            if not isinstance(node, Variable):
                return None
            out.append(named(node, cast(cst.Name, e.value).value))
        return out if out else None
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        left = members(program, expr.left, before, qualified, layers)
        right = members(program, expr.right, before, qualified, layers)
        return None if left is None or right is None else left + right
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Name) and expr.func.value in ("list", "tuple") and expr.func.value not in program.final \
                and len(expr.args) == 1 and not expr.args[0].keyword and not expr.args[0].star:
            return members(program, expr.args[0].value, before, qualified, layers)
        return _collection(program, expr, qualified(expr.func), before, qualified, layers)
    if isinstance(expr, cst.ListComp):
        return _filtered(program, expr, before, qualified, layers)
    return None


def named(node: Variable, text: str) -> Listed:
    """A variable the program names (`w`), listed."""
    return Listed(node.index, None, None if node.full_name is None else node.full_name + ":0", node.tf2_name(), text)


def loop_entries(entries: list[Listed]) -> list[Listed]:
    """The entries of a list that a loop made (their text is an index into the loop's lists)."""
    return [e for e in entries if e.site is not None]


def is_collection(call: cst.Call, qualified) -> bool:
    """Is `call` a getter of the variable collections (`tf.trainable_variables()`,
    `tf.get_collection(KEY)` of a variable key)?"""
    q = qualified(call.func)
    table = graph_ops()["variable_collections"]
    if matches(q, "collection_getters"):
        key = arg(call, 0, "key")
        return key is not None and (literal_string(key) or qualified(key) or "") in table
    return (q or "") in table


def entries(program, call: cst.Call, before: int, qualified, layers: bool = False) -> list[Listed] | None:
    """The variables the collection `call` lists at node index `before`, in TF1's order (None:
    not a collection of variables); Refusal where they cannot be listed exactly. `layers`:
    the weights of `tf.layers` layers made before are listed too (a Keras layer's weights
    exist once it was called: graph code only, see graph_collections)."""
    return _collection(program, call, qualified(call.func), before, qualified, layers)


def _collection(program, call: cst.Call, q, before: int, qualified, layers: bool = False,
                slots_read: bool = False) -> list[Listed] | None:
    """The entries of a collection call; `slots_read`: a global collection's filter was checked to
    drop every optimizer variable (_slots_excluded)."""
    table = graph_ops()["variable_collections"]
    if matches(q, "collection_getters"):
        key = arg(call, 0, "key")
        which = None if key is None else table.get(literal_string(key) or qualified(key) or "")
        if which is None:
            return None
        scope = arg(call, 1, "scope")
        extra = [a for a in call.args if a.keyword is not None and a.keyword.value not in ("key", "scope")]
    else:
        which = table.get(q or "")
        if which is None:
            return None
        scope = arg(call, 0, "scope")
        extra = [a for a in call.args if a.keyword is not None and a.keyword.value != "scope"]
    if extra or len(call.args) > 2:
        raise Refusal.of(call, "collection_arguments")
    for n in program.nodes[:before]:
        if isinstance(n, Layer) and not isinstance(n, RnnCell) and not (layers and layer_rows.layer_weights(n.row, n.bound) is not None) \
                or isinstance(n, RnnCell) and not layers:
            raise Refusal.of(call, "collection_with_layers")
        if isinstance(n, LayerLoop):
            _check_loop(n, layers, call)
    groups = [n for n in program.nodes[:before] if isinstance(n, VariableGroup)]
    if groups:   # (its members are read by subscript, not by name: not followed through a list of names)
        raise Refusal.of(call, "collection_with_variable_group", name=groups[0].names[0])
    prefix = "" if scope is None or isinstance(scope, cst.Name) and scope.value == "None" else literal_string(scope)
    if prefix is None or _REGEX & set(prefix):
        raise Refusal.of(call, "collection_scope_not_string")
    slotless = graph_ops()["slotless_optimizers"]
    if which == "global" and not slots_read and any(isinstance(n, OptimizerCall) and _optimizer(program, n).cls not in slotless
                                                    for n in program.nodes[:before]):
        # a train op made before it has added the optimizer's slot variables
        raise Refusal.of(call, "global_variables_after_slots")
    if which == "global" and any(isinstance(n, TrainOp) and n.rate_variable for n in program.nodes[:before]):
        raise Refusal.of(call, "global_variables_after_optimize_loss_rate")
    chosen: list[Listed] = []
    scoped: list[tuple[float, Listed]] = []   # a model class's layer methods: (when made, variable), merged in
    cells: list[tuple[tuple[int, int], Listed]] = []   # RNN cells' weights, made where a run ran them
    variables = [n for n in program.nodes[:before] if isinstance(n, Variable) and n.alias_of is None
                 or isinstance(n, (BuilderModule, Layer, LayerLoop))]
    for node in variables:
        if isinstance(node, BuilderModule) and node.method_of is not None:   # (each scope it was called with)
            scoped += [(index, Listed(node.index, tf1=tf1, text=text))
                       for index, text, tf1 in layer_methods.listed(node, prefix, before)]
            continue
        if isinstance(node, BuilderModule) and node.scope is None and node.scope_parameter is None:
            if prefix:   # (no scope of its own: its layers are named dense, dense_1, ... at the top)
                raise Refusal.of(call, "collection_part_of_builder", function=node.var)
            chosen.append(Listed(node.index, text=builders.variables_text(node)))
            scoped.append((node.index, chosen[-1]))
            continue
        if isinstance(node, BuilderModule) and node.scope is None:   # a layer function: each scope it was called with
            scoped += _per_scope(node, prefix, before, call)
            continue
        if isinstance(node, BuilderModule) and node.lazy:
            raise Refusal.of(call, "collection_of_builder_first_call", function=node.var)
        if isinstance(node, BuilderModule):   # a builder function's module: all its variables are `SCOPE/...`
            module_scope = cast(str, node.scope) + "/"
            if module_scope.startswith(prefix):
                chosen.append(Listed(node.index, text=builders.variables_text(node)))
                scoped.append((node.index, chosen[-1]))
            elif prefix.startswith(module_scope):
                raise Refusal.of(call, "collection_part_of_builder", function=node.var)
            continue
        if isinstance(node, RnnCell):   # (the Keras weights holding its TF1 variables: cell_collections)
            if node.made is not None and node.made[0] < before:
                cells += [(node.made, entry) for entry in cell_collections.listed(program, node, prefix, call)]
            continue
        if isinstance(node, (Layer, LayerLoop)):   # a layer's weights (`dense/kernel`: Keras 3 names each `kernel`),
            listed = [] if which == "trainable" and isinstance(node, Layer) and not node.trainable else \
                _loop_listed(node, which, prefix, call) if isinstance(node, LayerLoop) else \
                _layer_listed(node.index, node.row, node.bound, node.full_name, which, prefix, call)
            chosen += listed   # (... a loop's iteration by iteration, each in the order of the body)
            scoped += [(node.index, entry) for entry in listed]
            continue
        if which == "trainable" and not node.trainable:
            continue
        name = cast(str, node.full_name)   # (TF1's name, made unique: variables.checked)
        if name.startswith(prefix):
            chosen.append(Listed(node.index, None, name + ":0", node.tf2_name(), node.names[0]))
            scoped.append((node.index, chosen[-1]))
    scoped += [(made[0], entry) for made, entry in sorted(cells, key=lambda pair: pair[0])]
    if cells or any(entry not in chosen for _, entry in scoped):   # (in the order TF1 made them)
        return [entry for _, entry in sorted(scoped, key=lambda pair: pair[0])]
    return chosen


def _per_scope(node: BuilderModule, prefix: str, before: int, call: cst.CSTNode) -> list[tuple[float, Listed]]:
    """A layer function's variables (`def linear(x, n, scope)`: `SCOPE/w`, `SCOPE/b`), made at
    the first call under each scope, in the order of its calls before node `before`; each
    `made["SCOPE/w"]` of its module. Refusal where a call's scope is not a string, or the
    function makes layers or sets `trainable`."""
    if node.layers or any("trainable" in v[3] for v in node.variables) or any(s is None for _, s in node.scoped):
        raise Refusal.of(call, "collection_of_builder_scopes", function=node.var)
    out, seen = [], set()
    for index, scope in node.scoped:
        if index >= before or scope in seen:
            continue
        seen.add(scope)
        out += [(index, Listed(node.index, tf1=f"{scope}/{label}:0", text=f'{node.var}.made["{scope}/{label}"]'))
                for _, label, *_ in node.variables if f"{scope}/{label}".startswith(prefix)]
    return out


def _layer_listed(index: int, row: dict, bound: Bound, full: str, which: str, prefix: str, call: cst.CSTNode,
                  site: LayerSite | None = None, iteration: int = 0) -> list[Listed]:
    """The weights of the layer TF1 named `full` under the scope `prefix` (Keras 3 names each
    `kernel`); Refusal where TF1's order of them is not known (`unordered`)."""
    out = [Listed(index, weight, f"{full}/{leaf}:0", weight, site=site, iteration=iteration)
           for weight, leaf in layer_rows.layer_weights(row, bound, which) or () if f"{full}/{leaf}".startswith(prefix)]
    unordered = [e.weight for e in out if e.weight in row.get("unordered", ())]
    if len(unordered) > 1:
        raise Refusal.of(call, "collection_weights_order", layer=full, weights=", ".join(f"`{w}`" for w in unordered))
    return out


def _check_loop(node: LayerLoop, layers: bool, call: cst.CSTNode) -> None:
    """Refusal where the collection cannot list what the loop made: layers outside graph code,
    weights the table does not list, layers TF1 named at the top of the graph."""
    for site in node.sites:
        if not site.row["weights"]:
            continue
        if not layers or layer_rows.layer_weights(site.row, site.bound) is None:
            raise Refusal.of(call, "collection_with_layers")
        if node.runs is None or len(site.tf1_names) != node.runs:
            raise Refusal.of(call, "collection_loop_layers_unnamed", api=layer_rows.symbol_of(site.row))


def _loop_listed(node: LayerLoop, which: str, prefix: str, call: cst.CSTNode) -> list[Listed]:
    """What a loop made, as TF1 listed it: iteration by iteration, in each the variables and
    layers' weights in the order of the body, under each iteration's TF1 names (loop_names)."""
    out: list[Listed] = []
    for k in range(node.runs or 0):
        for site in node.made():
            if which == "trainable" and not site.trainable:
                continue
            if isinstance(site, VariableSite):
                name = site.tf1_names[k]
                if name.startswith(prefix):
                    out.append(Listed(node.index, None, name + ":0", name + ":0", site=site, iteration=k))
            elif site.row["weights"]:
                out += _layer_listed(node.index, site.row, site.bound, site.tf1_names[k], which, prefix, call, site, k)
    return out


def _filtered(program, comp: cst.ListComp, before: int, qualified, layers: bool = False) -> list[Listed] | None:
    """`[v for v in COLLECTION if PREDICATE(v.name)]`."""
    loop = comp.for_in
    if not isinstance(loop.target, cst.Name) or not isinstance(comp.elt, cst.Name) \
            or comp.elt.value != loop.target.value or loop.inner_for_in is not None or len(loop.ifs) > 1:
        return None
    slots = _slots_excluded(program, loop, before, qualified, layers)
    source = members(program, loop.iter, before, qualified, layers) if slots is None else slots
    if source is None:
        return None
    source = [part for e in source for part in (_builder_entries(program, e) or [e])]   # (a builder's, variable by variable)
    if any(e.tf1 is None or isinstance(program.nodes[e.node], BuilderModule) and e.weight is None and e.text is None
           for e in source):   # (`*enc.made...`: made call by call, named by the calls)
        raise Refusal.of(comp, "collection_filter_builder")
    if not loop.ifs:
        return source
    var = loop.target.value
    chosen = []
    for entry in source:
        tf1 = cast(str, entry.tf1)   # (TF1's name, made unique: variables.checked; a loop's per iteration)
        verdict = predicate(loop.ifs[0].test, var, tf1, tf1[:-2])
        if verdict is None:
            raise Refusal.of(loop.ifs[0], "collection_filter_unevaluated")
        if verdict:
            chosen.append(entry)
    return chosen


def _slots_excluded(program, loop: cst.CompFor, before: int, qualified, layers: bool) -> list[Listed] | None:
    """`tf.global_variables()` after a train op of an optimizer with slots, filtered by a test
    false on every name TF1 gives the optimizers' variables (slot_names): the collection
    without them. None where the iterable is something else (members reads it), or no
    optimizer has slots yet; Refusal where the filter may keep one of them."""
    call = loop.iter
    if not (isinstance(call, cst.Call) and len(loop.ifs) == 1 and isinstance(loop.target, cst.Name)):
        return None
    q = qualified(call.func)
    which = graph_ops()["variable_collections"].get(q or "")   # (`tf.global_variables()`; a getter's key: not read)
    slotless = graph_ops()["slotless_optimizers"]
    if which != "global" or not any(isinstance(n, OptimizerCall) and _optimizer(program, n).cls not in slotless
                                    for n in program.nodes[:before]):
        return None
    listed = _collection(program, call, q, before, qualified, layers, slots_read=True)
    trainable = _collection(program, call, "tensorflow.trainable_variables", before, qualified, layers) or []
    made = [e.tf1 for e in trainable if e.tf1 is not None]
    names = slot_names.names(program, before, made) if len(made) == len(trainable) else None
    if listed is None or names is None or any(
            predicate(loop.ifs[0].test, loop.target.value, name, name[:-2]) is not False for name in names):
        raise Refusal.of(call, "global_variables_after_slots")
    return listed


def _builder_entries(program, entry: Listed) -> list[Listed] | None:
    """A builder function's module listed variable by variable, each under TF1's name
    (`SCOPE/w:0`, `SCOPE/dense/kernel:0`) and written as its attribute (`disc.w`,
    `disc.dense.kernel`), in the order TF1 made them (builder_layers.variables_text);
    None where its names are not fixed: no scope of its own, a scope given by the caller,
    a model class's method, layers made call by call, a layer's `trainable` setting (its
    `tf.get_variable`s take none: builders.py)."""
    node = program.nodes[entry.node]
    if not isinstance(node, BuilderModule) or entry.tf1 is not None or node.scope is None or node.method_of is not None \
            or node.scope_parameter is not None or node.made_on_call or node.lazy:
        return None
    at = {id(s): i for i, s in enumerate(node.inner)}
    made = [(at[id(v[4])], 0, Listed(node.index, None, f"{node.scope}/{v[1]}:0", None, f"{node.var}.{builders.attribute_name(v[0])}"))
            for v in node.variables]
    for k, site in enumerate(node.layers):
        weights = layer_rows.layer_weights(site.row, site.bound)
        if weights is None or any(w in site.row.get("unordered", ()) for w, _ in weights[1:]) or "trainable" in site.bound:
            return None
        made += [(site.at, 1 + k, Listed(node.index, None, f"{node.scope}/{site.label}/{leaf}:0", weight,
                                         f"{node.var}.{site.attribute}.{weight}")) for weight, leaf in weights]
    return [listed for *_, listed in sorted(made, key=lambda m: m[:2])]


def _optimizer(program, node: OptimizerCall) -> Optimizer:
    opt = program.nodes[node.optimizer]
    assert isinstance(opt, Optimizer)
    return opt


def predicate(test: cst.BaseExpression, var: str, name: str, op_name: str | None) -> bool | None:
    """Evaluates a filter on `v.name` (`name`: `"head/w:0"`) or `v.op.name` (`op_name`:
    `"head/w"`, None where the variable has none); None where it reads anything else."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = predicate(test.expression, var, name, op_name)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = predicate(test.left, var, name, op_name), predicate(test.right, var, name, op_name)
        if left is None or right is None:
            return None
        return (left and right) if isinstance(test.operator, cst.And) else (left or right)
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and len(test.args) == 1 \
            and not test.args[0].keyword and test.func.attr.value in ("startswith", "endswith"):
        read, text = _name_of(test.func.value, var, name, op_name), literal_string(test.args[0].value)
        if read is None or text is None:
            return None
        return read.startswith(text) if test.func.attr.value == "startswith" else read.endswith(text)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op = test.comparisons[0]
        lhs, rhs = test.left, op.comparator
        if isinstance(op.operator, (cst.In, cst.NotIn)):
            text, read = literal_string(lhs), _name_of(rhs, var, name, op_name)
            if text is None or read is None:
                return None
            return (text in read) == isinstance(op.operator, cst.In)
        if isinstance(op.operator, (cst.Equal, cst.NotEqual)):
            read, text = _name_of(lhs, var, name, op_name), literal_string(rhs)
            if read is None or text is None:
                return None
            return (read == text) == isinstance(op.operator, cst.Equal)
    return None


def _name_of(expr, var: str, name: str, op_name: str | None) -> str | None:
    if isinstance(expr, cst.Attribute) and expr.attr.value == "name":
        owner = expr.value
        if isinstance(owner, cst.Name) and owner.value == var:
            return name
        if isinstance(owner, cst.Attribute) and owner.attr.value == "op" \
                and isinstance(owner.value, cst.Name) and owner.value.value == var:
            return op_name
    return None


def build(builder, s: Statement) -> bool:
    """A `VarList` for `vs = tf.trainable_variables(...)` (and lists of variables); False if not one.
    It reads the variables it lists: graph code computing from it reaches them (an L2 sum over
    it trains each one, as TF1's minimize did; a loop's, through the loop). A builder's module
    is reached by its calls only (builder_statistics reads a statement's modules as the builders
    it calls)."""
    if not s.one:
        return False
    program = builder.program
    listed = members(program, s.value, len(program.nodes), builder.qualified, layers=True)
    if listed is None:
        return False
    read = {e.node for e in listed if isinstance(program.nodes[e.node], (Variable, LayerLoop))}   # (a builder's: by its call)
    builder.add(s.item, VarList, s.names, s.value, set(s.deps) | read, members=listed)
    return True
