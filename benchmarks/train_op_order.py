"""What TF1 computes when one `sess.run` fetches ops it does not order.

Two measurements, under TF1 graph semantics (reference variables, as
`disable_v2_behavior()` gives, the verifier's original side):

1. `sess.run([d_train, g_train])` of a GAN: after each run, the variables are
   compared (all 4 steps of a run) with the three orders a TF2 step could write: both gradient sets
   from the values before the run ("before"), the discriminator's update first
   ("d_first"), the generator's first ("g_first"). "none" is a result none of
   them gives (some ops read a variable while the other update writes it).
2. `sess.run([train, loss, clip])` of a WGAN critic, `clip` the list of
   `p.assign(tf.clip_by_value(p, -c, c))`: does the run give what the clip first, or
   the update first, gives from the same state, and is every weight within the
   clip after the run ("clipped after")?
3. one `AdamOptimizer` applied twice in one run (`tf.group(opt.apply_gradients(a),
   opt.apply_gradients(b))`, a coupled GAN's shared weights): by how many steps do
   the optimizer's beta powers advance in a run (each apply advances them once)?
4. hand-written backprop, `[tf.assign(w1, w1 - lr * d_w1), ..., tf.assign(w2, ...)]` with
   `d_w1` computed through `w2`: did every assignment use gradients of the values the
   variables had before the run ("before")?

Usage: python benchmarks/train_op_order.py [SEEDS]   (about two minutes for 10)
"""

from __future__ import annotations

import collections
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

tf.disable_v2_behavior()
tf.logging.set_verbosity(tf.logging.ERROR)

OPTIMIZERS = {"sgd": lambda: tf.train.GradientDescentOptimizer(0.05),
              "adam": lambda: tf.train.AdamOptimizer(0.05, beta1=0.5)}


def _mlp(x, weights):
    for k, w in enumerate(weights):
        x = tf.matmul(x, w)
        x = tf.nn.relu(x) if k < len(weights) - 1 else x
    return x


def _gan(seed: int, width: int, depth: int, optimizer: str, order: str | None):
    """One GAN graph; order None: both train ops in one run, else the gradients computed
    first (fed back through placeholders) and applied in that order."""
    tf.reset_default_graph()
    rs = np.random.RandomState(seed)
    z = tf.placeholder(tf.float32, [None, width])
    real = tf.placeholder(tf.float32, [None, width])
    gen = [tf.Variable(rs.randn(width, width).astype(np.float32) * 0.3) for _ in range(depth)]
    dis = [tf.Variable(rs.randn(width, width).astype(np.float32) * 0.3) for _ in range(depth - 1)]
    dis.append(tf.Variable(rs.randn(width, 1).astype(np.float32) * 0.3))
    fake = tf.tanh(_mlp(z, gen))
    d_real, d_fake = _mlp(real, dis), _mlp(fake, dis)
    d_loss = tf.reduce_mean(tf.nn.softplus(-d_real) + tf.nn.softplus(d_fake))
    g_loss = tf.reduce_mean(tf.nn.softplus(-d_fake))
    d_opt, g_opt = OPTIMIZERS[optimizer](), OPTIMIZERS[optimizer]()
    if order is None:
        step = [d_opt.minimize(d_loss, var_list=dis), g_opt.minimize(g_loss, var_list=gen)]
        return z, real, gen + dis, lambda sess, feed: sess.run(step, feed)
    d_grads, g_grads = tf.gradients(d_loss, dis), tf.gradients(g_loss, gen)
    d_in = [tf.placeholder(tf.float32, v.shape) for v in dis]
    g_in = [tf.placeholder(tf.float32, v.shape) for v in gen]
    d_apply, g_apply = d_opt.apply_gradients(zip(d_in, dis)), g_opt.apply_gradients(zip(g_in, gen))

    def run(sess, feed):
        if order == "before":
            dg, gg = sess.run([d_grads, g_grads], feed)
            sess.run([d_apply, g_apply], {**dict(zip(d_in, dg)), **dict(zip(g_in, gg))})
        elif order == "d_first":
            sess.run(d_apply, dict(zip(d_in, sess.run(d_grads, feed))))
            sess.run(g_apply, dict(zip(g_in, sess.run(g_grads, feed))))
        else:
            sess.run(g_apply, dict(zip(g_in, sess.run(g_grads, feed))))
            sess.run(d_apply, dict(zip(d_in, sess.run(d_grads, feed))))
    return z, real, gen + dis, run


def _trajectory(seed, width, depth, optimizer, order, steps=4):
    z, real, variables, run = _gan(seed, width, depth, optimizer, order)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    rs = np.random.RandomState(seed + 1000)
    out = []
    for _ in range(steps):
        run(sess, {z: rs.randn(16, width), real: rs.randn(16, width) + 1.0})
        out.append(sess.run(variables))
    sess.close()
    return out


def _close(a, b) -> bool:
    return all(np.allclose(x, y, rtol=1e-4, atol=1e-6) for x, y in zip(a, b))


def two_train_ops(seeds: int) -> None:
    for width, depth in ((3, 1), (64, 4)):
        for optimizer in OPTIMIZERS:
            counts: collections.Counter = collections.Counter()
            for seed in range(seeds):
                one = _trajectory(seed, width, depth, optimizer, None)
                orders = {o: _trajectory(seed, width, depth, optimizer, o) for o in ("before", "d_first", "g_first")}
                # (the whole trajectory: a step computed otherwise shows in every later one)
                matched = [o for o, t in orders.items() if all(_close(a, b) for a, b in zip(one, t))]
                counts[matched[0] if matched else "none"] += 1
            print(f"two train ops, width {width} depth {depth} {optimizer}: 4 steps match {dict(counts)}")


def _critic(seed: int, width: int, optimizer: str):
    tf.reset_default_graph()
    rs = np.random.RandomState(seed)
    x, z = tf.placeholder(tf.float32, [None, width]), tf.placeholder(tf.float32, [None, width])
    weights = [tf.Variable(rs.randn(width, width).astype(np.float32) * 0.05) for _ in range(2)]
    weights.append(tf.Variable(rs.randn(width, 1).astype(np.float32) * 0.05))
    loss = tf.reduce_mean(_mlp(z, weights)) - tf.reduce_mean(_mlp(x, weights))
    opt = tf.train.RMSPropOptimizer(0.01) if optimizer == "rmsprop" else OPTIMIZERS[optimizer]()
    train = opt.minimize(loss, var_list=weights)
    clip = [p.assign(tf.clip_by_value(p, -0.06, 0.06)) for p in weights]
    return x, z, weights, loss, train, clip


def clipping(seeds: int) -> None:
    """Each run of `[train, loss, clip]` against the two orders a TF2 step could write,
    both started from the state TF1 had before that run (variables and slots): the clip
    first ("clip first"), the update first ("update first"), or neither ("neither": some op
    read a weight the other wrote during the run). Also: are the weights within the clip
    after the run ("clipped after")?"""
    for optimizer in ("rmsprop", "adam"):
        for width in (3, 16, 64, 128):
            counts: collections.Counter = collections.Counter()
            for seed in range(seeds):
                x, z, weights, loss, train, clip = _critic(seed, width, optimizer)
                state = tf.global_variables()
                sess = tf.Session()
                sess.run(tf.global_variables_initializer())
                rs = np.random.RandomState(seed + 7)
                for _ in range(6):
                    feed = {x: rs.randn(32, width) + 1.0, z: rs.randn(32, width)}
                    before = sess.run(state)
                    _, value, _ = sess.run([train, loss, clip], feed)
                    got = sess.run(state)
                    inside = all(np.all(np.abs(v) <= 0.06 + 1e-7) for v in sess.run(weights))
                    matched = "neither"
                    for order in ("clip first", "update first"):
                        for v, b in zip(state, before):
                            v.load(b, sess)
                        if order == "clip first":
                            sess.run(clip)
                        alt_value, _ = sess.run([loss, train], feed)
                        if order == "update first":
                            sess.run(clip)
                        if _close(got, sess.run(state)) and np.isclose(value, alt_value, rtol=1e-4, atol=1e-6):
                            matched = order
                    counts[(matched, "clipped after" if inside else "not clipped after")] += 1
                    for v, g in zip(state, got):
                        v.load(g, sess)
                sess.close()
            print(f"train op, loss and clipping in one run, {optimizer}, width {width}: {dict(sorted(counts.items()))}")


def adam_applied_twice(seeds: int) -> None:
    counts: collections.Counter = collections.Counter()
    for seed in range(seeds):
        tf.reset_default_graph()
        rs = np.random.RandomState(seed)
        x = tf.constant(rs.randn(32, 8).astype(np.float32))
        a, b = tf.Variable(rs.randn(8, 4).astype(np.float32)), tf.Variable(rs.randn(4, 1).astype(np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, a)), b)))
        opt = tf.train.AdamOptimizer(0.01)
        shared = [(0.5 * g, v) for g, v in opt.compute_gradients(loss, [b])]
        step = tf.group(opt.apply_gradients(opt.compute_gradients(loss, [a])), opt.apply_gradients(shared))
        beta1_power = opt._get_beta_accumulators()[0]
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        before = sess.run(beta1_power)
        for _ in range(30):
            sess.run(step)
            after = sess.run(beta1_power)
            counts[int(round(np.log(after / before) / np.log(0.9)))] += 1
            before = after
        sess.close()
    print(f"one Adam applied twice in one run: beta powers advanced by k steps {dict(sorted(counts.items()))}")


def hand_written_backprop(seeds: int) -> None:
    for hidden in (30, 100):
        counts: collections.Counter = collections.Counter()
        for seed in range(seeds):
            tf.reset_default_graph()
            rs = np.random.RandomState(seed)
            x, y = tf.placeholder(tf.float32, [None, 64]), tf.placeholder(tf.float32, [None, 10])
            w1, w2 = tf.Variable(rs.randn(64, hidden).astype(np.float32)), tf.Variable(rs.randn(hidden, 10).astype(np.float32))
            act1 = tf.sigmoid(tf.matmul(x, w1))
            act2 = tf.sigmoid(tf.matmul(act1, w2))
            d_pre2 = (act2 - y) * act2 * (1 - act2)
            d_w2 = tf.matmul(tf.transpose(act1), d_pre2)
            d_w1 = tf.matmul(tf.transpose(x), tf.matmul(d_pre2, tf.transpose(w2)) * act1 * (1 - act1))
            update = [tf.assign(w1, w1 - 0.5 * d_w1), tf.assign(w2, w2 - 0.5 * d_w2)]
            sess = tf.Session()
            sess.run(tf.global_variables_initializer())
            for _ in range(30):
                feed = {x: rs.rand(10, 64), y: np.eye(10)[rs.randint(0, 10, 10)]}
                before, grads = sess.run([w1, w2]), sess.run([d_w1, d_w2], feed)
                sess.run(update, feed)
                after = sess.run([w1, w2])
                same = all(np.allclose(a, b - 0.5 * g, rtol=1e-5, atol=1e-6) for a, b, g in zip(after, before, grads))
                counts["before" if same else "some read an assigned weight"] += 1
            sess.close()
        print(f"hand-written backprop, {hidden} hidden units: {dict(counts)}")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    two_train_ops(n)
    clipping(n)
    adam_applied_twice(n)
    hand_written_backprop(n)
