"""The statements that stay where they were: variables and optimizers.

`tf.get_variable` becomes `tf.Variable(initializer(shape), name=...)` with the
scope-qualified name; v1 optimizers become Keras optimizers, or stay v1 where
no Keras optimizer gives the same numbers. Both mappings are
tables (`rules/initializers.toml`, `rules/optimizers.toml`), not code.
"""

from __future__ import annotations

import functools
from typing import cast

import libcst as cst

from tf1gradfix.constructs import contrib, rnn_cells
from tf1gradfix.constructs.variable_loops import loop_statement
from tf1gradfix.constructs.layers import name_param, spread
from tf1gradfix.rules.catalog import _read
from tf1gradfix.emit.naming import Naming
from tf1gradfix.model.program import Program
from tf1gradfix.model.nodes import Layer, LayerLoop, Node, Optimizer, RnnCell, Tensor, Variable
from tf1gradfix.model.parts import LayerSite, VariableSite
from tf1gradfix.cst import layout
from tf1gradfix.cst.syntax import bound_args, schedule_table


from tf1gradfix.constructs.optimizers import FED_LR_STATUSES, optimizer_table  # noqa: F401  (both read from here by tests)


@functools.lru_cache(maxsize=None)
def initializer_table() -> tuple[str, dict[str, dict]]:
    raw = _read("initializers.toml")
    by_symbol = {}
    for key, row in raw["initializer"].items():
        for symbol in row["v1"]:
            by_symbol[symbol] = {**row, "key": key}
    return raw["default"], {**{f"@{k}": v for k, v in raw["initializer"].items()}, **by_symbol}


@functools.lru_cache(maxsize=None)
def default_initializer(qualified_dtype: str | None) -> str:
    """The table key of get_variable's initializer when none is given, by dtype."""
    raw = _read("initializers.toml")
    return raw["default_integer"] if qualified_dtype in raw["integer_dtypes"] else raw["default"]


class StateEmitter:
    def __init__(self, program: Program, code, qualified):
        self.p, self.code, self.qualified = program, code, qualified
        self.tf = program.tf_alias
        self.naming = Naming()   # filled by the restructurer before any text is asked for

    # -- variables -----------------------------------------------------------
    def variable(self, node: Variable) -> str | None:
        """New source of a variable statement, or None to keep it as it is."""
        bound = node.bound
        target = node.names[0]
        if node.source == "tensorflow.Variable":
            if node.full_name is None or node.unnamed or "name" in bound and node.full_name == _string(bound["name"]):
                return None
            value = self.code(bound["initial_value"])
        else:
            value = self._initial_value(node.value, bound)
        args = [value, f"name={node.full_name!r}".replace("'", '"')]
        if not node.trainable:
            args.append("trainable=False")
        if "dtype" in bound and node.source == "tensorflow.Variable":
            args.append(f"dtype={self.code(bound['dtype'])}")
        return f"{target} = {self.tf}.Variable({', '.join(args)})"

    def builder_variable(self, call: cst.Call, bound) -> str:
        """The initial value of a builder function's `tf.get_variable`."""
        return self._initial_value(call, bound)

    def _initial_value(self, where: cst.CSTNode, bound) -> str:
        shape = bound.get("shape")
        init = bound.get("initializer")
        dtype = bound.get("dtype")
        default_key, table = initializer_table()
        if init is not None and not isinstance(init, cst.Call):   # (its forms: constructs.variables.check_initial_value)
            return self.code(init)
        if shape is None:
            return self.code(cast(cst.Call, init))   # a tensor value: its shape is the variable's
        if init is None:
            default_key = default_initializer(self.qualified(dtype) if dtype is not None else None)
        # get_variable calls its initializer with its own dtype (float32 when it names none):
        # the dtype an initializer names is not the variable's
        ctor, _ = self.initializer(init if init is not None else default_key)
        return f"{ctor}({self.code(shape)}" + (f", dtype={self.code(dtype)})" if dtype is not None else ")")

    def initializer(self, init: cst.Call | str) -> tuple[str, cst.BaseExpression | None]:
        """The TF2 initializer object for a v1 initializer call (or a table key), and
        the dtype the v1 call named, which moves to where the initializer is called."""
        _, table = initializer_table()
        row: dict | None
        if isinstance(init, str):
            row, call_args = table[f"@{init}"], {}
        else:
            contrib_row = contrib.initializer_row(self.qualified(init.func))
            if contrib_row is not None:
                return contrib.initializer(init, contrib_row, self.code, self.tf)
            row = table[self.qualified(init.func) or ""]   # (mapped: constructs.variables.check_initializer)
            call_args = bound_args(init, row["params"], init)
        kwargs, dtype = dict(row.get("defaults", {})), None
        for v1_name, expr in call_args.items():
            if v1_name == "dtype":
                dtype = expr
            elif v1_name in row["map"]:
                kwargs[row["map"][v1_name]] = self.code(expr)
        return f"{self.tf}.{row['target']}({', '.join(f'{k}={v}' for k, v in kwargs.items())})", dtype

    # -- layers --------------------------------------------------------------
    def layer(self, node: Layer) -> str:
        """`<var> = tf.keras.layers.X(<the v1 settings>)`: positional settings keep their
        place up to the table's `positional`; initializers are mapped like get_variable's."""
        if isinstance(node, RnnCell):
            return rnn_cells.layer_text(node, self.naming.layers[node], self.tf, self.code)
        row = node.row
        args = self._layer_args(row, node.value, node.bound)
        if (row.get("write_name") or self.scoped(node)) and name_param(row) not in node.bound \
                and self._tf1_name_known(row):
            args.append(f'name="{node.full_name.rsplit("/", 1)[-1]}"')   # (Keras would name it otherwise)
        return f"{self.naming.layers[node]} = {self.target(row, node.helper)}({', '.join(args)})"   # (laid out by the assembler)

    def target(self, row: dict, helper: str | None = None) -> str:
        """The class a layer becomes: the row's Keras layer, or a class of rules/helpers.toml."""
        return self.naming.helpers[helper] if helper else f"{self.tf}.{row['target']}"

    def scoped(self, node: Layer) -> str | None:
        """The variable scope TF1 made a layer in (`encoder`), which the TF2 program enters as a
        Keras name scope where it calls the layer: Keras names its weights `encoder/dense/kernel`
        as TF1 did (the verifier pairs them by name); None at the top, for a layer without weights,
        or where TF1's name is not known."""
        scope = node.full_name.rpartition("/")[0] if node.weights and not isinstance(node, RnnCell) else ""
        return scope if scope and self._tf1_name_known(node.row) else None

    def _tf1_name_known(self, row: dict) -> bool:
        """TF1 numbers unnamed layers of a kind in creation order; a loop making such layers
        makes that order unknown here (its layers keep Keras's names, paired by the verifier in order),
        unless they are made under the loop's variable scopes (counted in those: constructs/loop_layers.py)."""
        return not any(site.row is row and not site.scopes for n in self.p.nodes if isinstance(n, LayerLoop) for site in n.sites)

    def layer_loop(self, node: LayerLoop) -> list[str]:
        """The loop that creates layers, run once where the graph was built: each
        layer appended to its list; statements computing graph values left out."""
        loop = node.loop
        lines = [f"{self.naming.lists[site]} = []" for site in node.made()]
        lines.append(f"for {self.code(loop.target)} in {self.code(loop.iter)}:")
        for st in node.statements:
            if isinstance(st.site, LayerSite):
                site = st.site
                made = self.layer_constructor(site.row, site.call, site.bound, site.helper, site.name)
                lines.append(f"    {self.naming.lists[site]}.append({made})")
            elif isinstance(st.site, VariableSite):
                lines.append(f"    {self.naming.lists[st.site]}.append({self.loop_variable(st.site)})")
            elif st.role == "host":
                lines.append(f"    {loop_statement(st, self.code)}")
        return lines

    def loop_variable(self, site: VariableSite) -> str:
        """`tf.Variable(<initial value>, name=<its TF1 name>)` of a loop's variable statement."""
        value = self.code(site.bound["initial_value"]) if site.source == "tensorflow.Variable" \
            else self._initial_value(site.call, site.bound)
        args = [value, f"name={site.name}"]
        if not site.trainable:
            args.append("trainable=False")
        if "dtype" in site.bound and site.source == "tensorflow.Variable":
            args.append(f"dtype={self.code(site.bound['dtype'])}")
        return f"{self.tf}.Variable({', '.join(args)})"

    def layer_constructor(self, row: dict, call: cst.Call, bound: dict, helper: str | None = None,
                          name: str | None = None) -> str:
        """`name`: a `name=` to write where TF1's name is not Keras's (a loop's layer under its scopes)."""
        args = self._layer_args(row, call, bound) + ([f"name={name}"] if name is not None and row["weights"] else [])
        return f"{self.target(row, helper)}({', '.join(args)})"

    def _layer_args(self, row: dict, call: cst.Call, bound: dict) -> list[str]:
        source = bound[row["params"][0]]
        args: list[tuple[int, bool, str]] = []   # (the v1 parameter's place, positional, text)
        for position, a in enumerate(a for a in call.args if a.value is not source):
            param = a.keyword.value if a.keyword is not None else row["params"][position + 1]
            if param == "reuse" or param in row.get("call", ()) or param in row.get("accepted", {}):
                continue   # reuse None/False: a new layer, as every Keras layer is; `training` goes to the call
            if param in row.get("spread", {}):   # (a dict literal: one initializer argument per key)
                args += [(row["params"].index(param), False, f"{keyword}={self.initializer(cast(cst.Call, init))[0]}")
                         for keyword, init in spread(row, param, a.value)]
                continue
            value = self.code(a.value)
            setting = row.get("values", {}).get(param, {}).get(value)   # (`biases_initializer=None`: use_bias=False)
            if setting is not None:
                args.append((row["params"].index(param), False, setting))
                continue
            if param in row["initializers"]:   # (a call naming no dtype: constructs.layers.check_layer_arguments)
                value, _ = self.initializer(cast(cst.Call, a.value))
            keyword = row.get("rename", {}).get(param, param)
            positional = a.keyword is None and position < row["positional"]
            args.append((row["params"].index(param), positional, value if positional else f"{keyword}={value}"))
        for param, value in row.get("defaults", {}).items():   # a v1 default Keras lacks (contrib's ReLU)
            if param not in bound:   # written in the v1 parameters' order, after the positional settings
                place = row["params"].index(param)
                at = next((i for i, (p, positional, _) in enumerate(args) if not positional and p > place), len(args))
                value = value.replace("tf.", f"{self.tf}.", 1) if value.startswith("tf.") else value
                args.insert(at, (place, False, f"{row.get('rename', {}).get(param, param)}={value}"))
        return [text for _, _, text in args]

    # -- optimizers ----------------------------------------------------------
    def optimizer(self, node: Optimizer, target: str, fed_lr: bool, schedule: str | None = None) -> str:
        """The optimizer statement: the row's target with the v1 arguments mapped.

        A `not_equivalent` row keeps the v1 optimizer (it runs eagerly and in
        tf.function), with the reason as a comment; `manual` rows were refused (optimizers.check)."""
        row = optimizer_table()[node.cls]
        call = node.call
        bound = bound_args(call, row["params"], call)
        kwargs = dict(row["defaults"])
        for v1_name, expr in bound.items():
            if v1_name in row["map"]:
                kwargs[row["map"][v1_name]] = self.code(expr)
        if fed_lr:
            kwargs["learning_rate"] = "0.0"   # set from the fed value before every update
        elif schedule is not None:
            kwargs["learning_rate"] = schedule   # evaluated on the optimizer's iterations at every update
        args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        text = f"{target} = {self.tf}.{row['target']}({args})"
        if row["status"] == "not_equivalent":
            # kept on purpose: the comment says why and keeps `check` quiet on this line
            text += "  # tf1gradfix: ignore[TFG205] kept: no Keras optimizer gives the same updates; see `tf1gradfix explain TFG207`"
        return text

    def kept(self, node: Optimizer) -> str | None:
        """Why the v1 optimizer stays v1 (an info note of the rewrite, TFG207), or None."""
        row = optimizer_table().get(node.cls)
        if row is None or row["status"] != "not_equivalent":
            return None
        return f"`{node.cls}` stays `tf.{row['target']}`: no Keras optimizer gives the same updates ({row['why']})"

    def scheduled_rate(self, opt: Optimizer) -> Tensor | None:
        """The graph statement `lr = tf.train.<schedule>(...)` the optimizer's learning rate names."""
        lr = self.learning_rate(opt)
        node = self.p.node(lr.value) if isinstance(lr, cst.Name) else None
        if not isinstance(node, Tensor) or len(node.names) != 1 or not isinstance(node.value, cst.Call):
            return None
        return node if self.qualified(node.value.func) in schedule_table() else None

    def schedule(self, node: Node, indent: int) -> cst.SimpleStatementLine:
        """`lr = tf.train.exponential_decay(0.1, step, ...)` -> the Keras schedule called on the
        same step: the same rate, computed where TF1 computed it (rules/schedules.toml)."""
        text = f"{node.names[0]} = {self.schedule_object(node)}({self.code(self.schedule_step(node))})"
        statement = cast(cst.SimpleStatementLine, cst.parse_statement(layout.fit(text, indent) + "\n"))
        return statement.with_changes(leading_lines=node.stmt.leading_lines)

    def schedule_object(self, node: Node) -> str:
        """The Keras schedule of the v1 schedule call `node` computes (its step aside)."""
        call = node.value
        row = schedule_table()[self.qualified(call.func)]
        bound = bound_args(call, row["params"], call)
        args = ", ".join(f"{row['map'][k]}={self.code(v)}" for k, v in bound.items() if k in row["map"])
        return f"{self.tf}.{row['target']}({args})"

    def schedule_step(self, node: Node) -> cst.BaseExpression:
        call = node.value
        row = schedule_table()[self.qualified(call.func)]
        return bound_args(call, row["params"], call)[row["step"]]   # (given: constructs.optimizers.check_settings)

    def learning_rate(self, node: Optimizer) -> cst.BaseExpression | None:
        row = optimizer_table().get(node.cls)
        if row is None:
            return None
        return bound_args(node.call, row["params"], node.call).get("learning_rate")


def _string(expr) -> str | bytes | None:
    return expr.evaluated_value if isinstance(expr, cst.SimpleString) else None

