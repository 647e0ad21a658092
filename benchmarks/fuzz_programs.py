"""Seeded generator of small runnable TF1 training programs for fuzz_verify.py.

Each program is composed from the pattern blocks the rewrite supports
(placeholders and feeds, tf.Variable / tf.get_variable / tf.layers.dense,
frozen variables, embeddings, constant+variable concat, masks,
stop_gradient, tf.gradients probes, minimize with or without var_list,
compute_gradients -> edit -> apply_gradients, clip_by_global_norm with the
norm discarded as `_` or fetched, every TF1 optimizer, global step, a second
train op, a learning rate scheduled on the global step) with names, shapes, dtypes and step counts drawn
from one random.Random(seed). No tf1gradfix import: the generator must not
share code with what it tests.
"""

from __future__ import annotations

import random

NOUNS = ["w", "weights", "kernel", "proj", "dense", "layer", "head", "enc", "fc", "lin", "coef", "theta"]
BIASES = ["b", "bias", "offset", "shift", "intercept"]
INPUTS = ["x", "inputs", "feats", "xs", "batch_x", "data_in"]
TARGETS = ["y", "labels", "target", "ys", "batch_y", "truth"]
LOSSES = ["loss", "cost", "objective", "mse", "err", "total_loss"]
TRAINS = ["train_op", "step_op", "update", "opt_step", "train", "apply_op"]
OPTS = ["opt", "optimizer", "solver", "trainer", "sgd"]
SESS = ["sess", "session", "s"]
SCOPES = ["model", "net", "layer1", "block", "encoder", "regressor"]

# (constructor, argument text); every optimizer of rules/optimizers.toml
OPTIMIZERS = [
    ("GradientDescentOptimizer", ["0.1", "0.05", "learning_rate=0.2"]),
    ("MomentumOptimizer", ["0.05, momentum=0.9", "learning_rate=0.1, momentum=0.5", "0.02, 0.9, use_nesterov=True"]),
    ("AdamOptimizer", ["0.01", "learning_rate=0.05", "0.01, beta1=0.8"]),
    ("AdagradOptimizer", ["0.3", "0.1, initial_accumulator_value=0.5"]),
    ("AdadeltaOptimizer", ["1.0", "1.0, rho=0.9, epsilon=1e-6"]),
    ("RMSPropOptimizer", ["0.01", "0.01, decay=0.8", "0.01, momentum=0.5", "0.01, centered=True"]),
    ("FtrlOptimizer", ["0.5", "0.3, l1_regularization_strength=0.01"]),
    ("ProximalGradientDescentOptimizer", ["0.1", "0.1, l2_regularization_strength=0.01"]),
    ("ProximalAdagradOptimizer", ["0.3", "0.2, l1_regularization_strength=0.001"]),
]
INITS = [
    "tf.random_normal_initializer(stddev=0.5, seed={s})",
    "tf.truncated_normal_initializer(stddev=0.3, seed={s})",
    "tf.glorot_uniform_initializer(seed={s})",
    "tf.constant_initializer(0.1)",
]
ACTS = ["tf.tanh", "tf.nn.relu", "tf.sigmoid", ""]


class _Names:
    """Draws distinct identifiers from the word lists."""

    def __init__(self, rnd: random.Random):
        self.rnd, self.used = rnd, set()

    def __call__(self, words: list[str]) -> str:
        for _ in range(20):
            name = self.rnd.choice(words)
            if name not in self.used:
                break
            name = f"{name}{self.rnd.randint(1, 9)}"
            if name not in self.used:
                break
        self.used.add(name)
        return name


def generate(seed: int) -> tuple[str, list[str]]:
    """Return (program source, list of the pattern tags used)."""
    rnd = random.Random(seed)
    name = _Names(rnd)
    tags: list[str] = []
    f64 = rnd.random() < 0.2
    dt, npdt = ("tf.float64", "np.float64") if f64 else ("tf.float32", "np.float32")
    if f64:
        tags.append("float64")
    n_in, n_hid = rnd.randint(2, 6), rnd.randint(2, 8)
    batch, steps = rnd.choice([8, 16]), rnd.randint(3, 8)
    embed = rnd.random() < 0.2
    x, y, loss = name(INPUTS), name(TARGETS), name(LOSSES)
    host = ["import numpy as np", "import tensorflow as tf", "",
            f"rng = np.random.RandomState({rnd.randint(0, 999)})"]
    graph: list[str] = []
    trainables: list[str] = []   # names of variables that are trainable (for var_list)
    dense_grads: list[str] = []  # trainables with a dense, non-None gradient (for probes, var_list)
    data_x, data_y = "data_x", "data_y"

    if embed:
        tags.append("embedding")
        vocab, dim, width = rnd.randint(5, 12), rnd.randint(2, 4), rnd.randint(2, 4)
        host.append(f"{data_x} = rng.randint(0, {vocab}, size=({batch * steps}, {width}))")
        graph.append(f"{x} = tf.placeholder(tf.int32, [None, {width}])")
        table = name(["emb", "embedding", "table", "lookup_w"])
        if rnd.random() < 0.3:
            tags.append("concat_const_var")
            frozen = rnd.randint(1, vocab - 1)
            host.append(f"pretrained = rng.randn({frozen}, {dim}).astype({npdt})")
            graph.append(f"{table}_new = tf.Variable(tf.random_normal([{vocab - frozen}, {dim}], stddev=0.3, seed={rnd.randint(1, 99)}, dtype={dt}), name=\"{table}_new\")")
            graph.append(f"{table} = tf.concat([tf.constant(pretrained), {table}_new], axis=0)")
            trainables.append(f"{table}_new")
        else:
            graph.append(f"{table} = tf.Variable(tf.random_normal([{vocab}, {dim}], stddev=0.3, seed={rnd.randint(1, 99)}, dtype={dt}), name=\"{table}\")")
            trainables.append(table)
            if rnd.random() < 0.3:
                tags.append("row_mask")
                keep = [rnd.choice(["1.0", "0.0"]) for _ in range(vocab)]
                graph.append(f"row_keep = tf.constant([{', '.join('[' + k + ']' for k in keep)}], dtype={dt})")
                graph.append(f"{table}_used = tf.stop_gradient((1.0 - row_keep) * {table}) + row_keep * {table}")
                tags.append("stop_gradient")
                table = f"{table}_used"
        feat = "pooled"
        graph.append(f"{feat} = tf.reduce_mean(tf.nn.embedding_lookup({table}, {x}), axis=1)")
        n_in = dim
    else:
        host.append(f"{data_x} = rng.randn({batch * steps}, {n_in}).astype({npdt})")
        graph.append(f"{x} = tf.placeholder({dt}, [None, {n_in}], name=\"{x}\")")
        feat = x
    host.append(f"{data_y} = rng.randn({batch * steps}, 1).astype({npdt})")
    graph.append(f"{y} = tf.placeholder({dt}, [None, 1], name=\"{y}\")")

    # -- body: one or two layers ------------------------------------------------------------
    h = feat
    layers = rnd.randint(1, 2)
    dims = [n_in] + ([n_hid] if layers == 2 else []) + [1]
    style = rnd.choice(["variable", "get_variable", "dense"] if not f64 else ["variable", "get_variable"])
    tags.append(style)
    frozen_done = False
    for i in range(layers):
        a, b_ = dims[i], dims[i + 1]
        act = rnd.choice(ACTS) if i < layers - 1 else ""
        out = name(["hidden", "h", "act", "z", "pre"]) if i < layers - 1 else name(["pred", "logits", "out", "yhat"])
        if style == "dense":
            lname = name(SCOPES)
            act_arg = f", activation={act}" if act else ""
            init = rnd.choice(INITS).format(s=rnd.randint(1, 99))
            graph.append(f"{out} = tf.layers.dense({h}, {b_}{act_arg}, kernel_initializer={init}, name=\"{lname}\")")
            h = out
            continue
        w, b = name(NOUNS), name(BIASES)
        trainable_w = not frozen_done and layers == 2 and i == 0 and rnd.random() < 0.3
        t_arg = ", trainable=False" if trainable_w else ""
        if trainable_w:
            frozen_done = True
            tags.append("trainable_false")
        if style == "variable":
            init = rnd.choice(["tf.random_normal", "tf.truncated_normal"])
            graph.append(f"{w} = tf.Variable({init}([{a}, {b_}], stddev=0.4, seed={rnd.randint(1, 99)}, dtype={dt}), name=\"{w}\"{t_arg})")
            graph.append(f"{b} = tf.Variable(tf.zeros([{b_}], dtype={dt}), name=\"{b}\")")
        else:
            scope = name(SCOPES)
            init = rnd.choice(INITS).format(s=rnd.randint(1, 99))
            graph.append(f"with tf.variable_scope(\"{scope}\"):")
            graph.append(f"    {w} = tf.get_variable(\"W\", [{a}, {b_}], dtype={dt}, initializer={init}{t_arg})")
            graph.append(f"    {b} = tf.get_variable(\"b\", [{b_}], dtype={dt}, initializer=tf.zeros_initializer())")
        if not trainable_w:
            trainables.append(w)
        trainables.append(b)
        dense_grads.append(b)
        pre = f"tf.matmul({h}, {w}) + {b}"
        if rnd.random() < 0.15:
            tags.append("stop_gradient")
            pre = f"tf.matmul({h}, tf.stop_gradient({w})) + {b}" if not trainable_w else pre
        elif not trainable_w:
            dense_grads.append(w)
        graph.append(f"{out} = {act}({pre})" if act else f"{out} = {pre}")
        h = out
    scale = None
    if rnd.random() < 0.2:
        tags.append("frozen_scale")
        scale = name(["scale", "gain", "temperature"])
        graph.append(f"{scale} = tf.Variable(tf.constant(1.5, dtype={dt}), trainable=False, name=\"{scale}\")")
        h = f"{scale} * {h}"
    graph.append(f"{loss} = tf.reduce_mean(tf.square({h} - {y}))")

    # -- training ----------------------------------------------------------------------------
    # TF1's proximal optimizers do not cast their learning rate to float64 variables
    opt_cls, opt_args = rnd.choice([o for o in OPTIMIZERS if not (f64 and o[0].startswith("Proximal"))])
    tags.append(opt_cls)
    opt, train = name(OPTS), name(TRAINS)
    gstep = None
    if rnd.random() < 0.3:
        tags.append("global_step")
        gstep = name(["global_step", "gstep", "step_var"])
        graph.append(f"{gstep} = tf.Variable(0, trainable=False, name=\"{gstep}\")")
    gs_arg = f", global_step={gstep}" if gstep else ""
    args = rnd.choice(opt_args)
    if gstep and rnd.random() < 0.4:   # a learning rate scheduled on the global step
        tags.append("schedule")
        rate = name(["lr", "rate", "learning_rate_t"])
        schedule = rnd.choice([f"tf.train.exponential_decay({args.split(', ')[0].split('=')[-1]}, {gstep}, 3, 0.5"
                               + rnd.choice(["", ", staircase=True"]) + ")",
                               f"tf.train.piecewise_constant({gstep}, [2, 4], [0.1, 0.05, 0.02])"])
        args = ", ".join([rate] + args.split(", ")[1:])
        opt_lines = [graph.pop(), f"{rate} = {schedule}"]   # (the global step's line first)
    else:
        opt_lines = []
    opt_lines.append(f"{opt} = tf.train.{opt_cls}({args})")
    if rnd.random() < 0.3:
        tags.append("optimizer_first")
        at = len(graph) - 1 - (gstep is not None and len(opt_lines) == 1)
        graph[at:at] = opt_lines
    else:
        graph += opt_lines
    mode = rnd.choice(["minimize", "minimize_var_list", "edit", "edit", "global_norm"] if style != "dense" else ["minimize", "edit", "global_norm"])
    tags.append(mode)
    edited = fetched_norm = None
    var_list = rnd.sample(dense_grads, rnd.randint(1, len(dense_grads))) if dense_grads else []
    if mode == "minimize_var_list" and not var_list:
        mode = "minimize"
    if mode == "minimize":
        graph.append(f"{train} = {opt}.minimize({loss}{gs_arg})")
    elif mode == "minimize_var_list":
        graph.append(f"{train} = {opt}.minimize({loss}, var_list=[{', '.join(var_list)}]{gs_arg})")
    elif mode == "edit":
        edit = rnd.choice(["clip_by_value", "clip_by_norm"] + ([] if embed else ["scale"]))  # IndexedSlices has no *
        tags.append(edit)
        expr = {"clip_by_value": "tf.clip_by_value(g, -0.5, 0.5)", "clip_by_norm": "tf.clip_by_norm(g, 1.0)",
                "scale": "g * 0.5"}[edit]
        pairs, edited = name(["grads_and_vars", "gvs", "pairs"]), name(["capped", "clipped", "new_gvs"])
        graph.append(f"{pairs} = {opt}.compute_gradients({loss})")
        graph.append(f"{edited} = [({expr}, v) for g, v in {pairs} if g is not None]")
        graph.append(f"{train} = {opt}.apply_gradients({edited}{gs_arg})")
    elif rnd.random() < 0.7:
        gr, vs = name(["grads", "gradients"]), name(["tvars", "params", "variables"])
        graph.append(f"{gr}, {vs} = zip(*{opt}.compute_gradients({loss}))")
        norm = rnd.choice(["_", "gnorm"])
        graph.append(f"{gr}, {norm} = tf.clip_by_global_norm({gr}, 1.0)")
        fetched_norm = norm if norm != "_" and rnd.random() < 0.6 else None
        graph.append(f"{train} = {opt}.apply_gradients(zip({gr}, {vs}){gs_arg})")
    else:
        gr, vs = name(["grads", "gradients"]), name(["tvars", "params", "variables"])
        graph.append(f"{vs} = tf.trainable_variables()")
        graph.append(f"{gr}, _ = tf.clip_by_global_norm(tf.gradients({loss}, {vs}), 1.0)")
        graph.append(f"{train} = {opt}.apply_gradients(zip({gr}, {vs}){gs_arg})")
    probe = None
    if rnd.random() < 0.3 and dense_grads:
        tags.append("gradient_probe")
        probe = name(["probe", "grad_w", "g_probe"])
        graph.append(f"{probe} = tf.gradients({loss}, [{rnd.choice(dense_grads)}])[0]")
    second = None
    if rnd.random() < 0.15 and len(trainables) >= 2 and gstep is None:
        tags.append("two_train_ops")
        second = name(TRAINS)
        graph.append(f"{second} = tf.train.GradientDescentOptimizer(0.05).minimize({loss}, var_list=[{trainables[-1]}])")

    # -- session -------------------------------------------------------------------------------
    sess = name(SESS)
    fmt = rnd.choice(["step %d loss %.6f", "%d: %.6f", "iter %d cost %.6f"])
    loop = [f"for step in range({steps}):",
            f"    sl = slice(step * {batch}, (step + 1) * {batch})",
            f"    feed = {{{x}: {data_x}[sl], {y}: {data_y}[sl]}}"]
    if probe and rnd.random() < 0.5:
        loop.append(f"    print(\"probe %.6f\" % np.abs({sess}.run({probe}, feed)).sum())")
    if fetched_norm:
        tags.append("fetched_norm")
        loop.append(f"    _, value, norm_value = {sess}.run([{train}, {loss}, {fetched_norm}], feed_dict=feed)")
        loop.append("    print(\"norm %.6f\" % norm_value)")
    elif rnd.random() < 0.5:
        loop.append(f"    _, value = {sess}.run([{train}, {loss}], feed_dict=feed)")
    else:
        loop.append(f"    value, _ = {sess}.run([{loss}, {train}], feed)")
    if second:
        loop.append(f"    {sess}.run({second}, feed)")
    loop.append(f"    print(\"{fmt}\" % (step, value))")
    final = [f"print(\"final %.6f\" % {sess}.run({loss}, {{{x}: {data_x}, {y}: {data_y}}}))"]
    if trainables:
        final.append(f"print(np.round({sess}.run({trainables[0]}), 6))")
    if gstep:
        final.append(f"print(\"global step\", {sess}.run({gstep}))")
    if rnd.random() < 0.5:
        tags.append("with_session")
        body = [f"with tf.Session() as {sess}:", f"    {sess}.run(tf.global_variables_initializer())"]
        body += ["    " + line for line in loop + final]
    else:
        body = [f"{sess} = tf.Session()", f"{sess}.run(tf.global_variables_initializer())"]
        body += loop + final + [f"{sess}.close()"]
    doc = f'"""Generated program (seed {seed}): {", ".join(tags)}."""'
    return "\n".join([doc] + host + [""] + graph + [""] + body) + "\n", tags
