"""What TF1 returns for a value fetched in the same run as an update, measured on CPU.

    .venv/bin/python benchmarks/run_order.py [--runs N] [--threads T] [--optimizer sgd|adam|momentum] [--resource]

TF1 semantics as the verifier's original side has them (tensorflow.compat.v1,
v2 behaviour disabled, reference variables unless --resource). Each run is
checked against the values read in runs of their own just before and after it:

* `[loss, tf.assign(w, w - lr * g)]` with `g = tf.gradients(loss, w)`: is the
  fetched loss the one before the assignment or after it?
* `[train_op, v]`, `[tf.assign(...), w]`, `[k.assign(k + ...), k]`,
  `[tf.assign_add(c, x), c]`: is the fetched variable the value before its update
  or after it?

The counts are the figures of verify/TOLERANCES.md ("Values fetched with an
update"). TensorFlow is imported here: run it apart from the tool.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--threads", type=int, default=0, help="intra- and inter-op threads (0: TensorFlow's default)")
    parser.add_argument("--optimizer", choices=("sgd", "adam", "momentum"), default="sgd")
    parser.add_argument("--resource", action="store_true", help="resource variables (use_resource=True)")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()

    rng = np.random.RandomState(0)
    data, target = rng.randn(256, 16).astype(np.float32), rng.randn(256, 1).astype(np.float32)
    x, y = tf.placeholder(tf.float32, [None, 16]), tf.placeholder(tf.float32, [None, 1])
    w = tf.get_variable("w", initializer=rng.randn(16, 1).astype(np.float32), use_resource=args.resource)
    v = tf.get_variable("v", initializer=rng.randn(16, 1).astype(np.float32), use_resource=args.resource)
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    update = tf.assign(w, w - 0.01 * tf.gradients(loss, w)[0])
    optimizer = {"sgd": lambda: tf.train.GradientDescentOptimizer(0.01), "adam": lambda: tf.train.AdamOptimizer(0.01),
                 "momentum": lambda: tf.train.MomentumOptimizer(0.01, 0.9)}[args.optimizer]()
    train = optimizer.minimize(tf.reduce_mean(tf.square(tf.matmul(x, v) - y)), var_list=[v])
    k = tf.get_variable("k", initializer=np.float32(0.0), trainable=False, use_resource=args.resource)
    balance = k.assign(k + 0.01 * (0.5 * loss - k))   # (a BEGAN-style balance term, the method form)
    count = tf.get_variable("count", initializer=np.float32(0.0), trainable=False, use_resource=args.resource)
    bump = tf.assign_add(count, loss)
    feed = {x: data, y: target}
    counts: Counter = Counter()

    def seen(what: str, fetched, before, after) -> None:
        counts[what, "before" if np.array_equal(fetched, before) else "after" if np.array_equal(fetched, after)
               else "neither"] += 1

    config = tf.ConfigProto(intra_op_parallelism_threads=args.threads, inter_op_parallelism_threads=args.threads)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(args.runs):
            before = sess.run(loss, feed)
            fetched, _ = sess.run([loss, update], feed)
            seen("loss fetched with the assignment computed from its gradient", fetched, before, sess.run(loss, feed))
            before = sess.run(v).copy()
            _, fetched = sess.run([train, v], feed)
            seen(f"variable fetched with its {args.optimizer} train op", fetched, before, sess.run(v))
            before = sess.run(w).copy()
            _, fetched = sess.run([update, w], feed)
            seen("variable fetched with its assignment", fetched, before, sess.run(w))
            before = sess.run(k).copy()
            _, fetched = sess.run([balance, k], feed)
            seen("scalar fetched with its `k.assign(k + ...)`", fetched, before, sess.run(k))
            before = sess.run(count).copy()
            _, fetched = sess.run([bump, count], feed)
            seen("scalar fetched with its `tf.assign_add`", fetched, before, sess.run(count))
    kind = "resource" if args.resource else "reference"
    print(f"TensorFlow {tf.__version__}, {kind} variables, threads {args.threads or 'default'}, {args.runs} runs")
    for (what, when), n in sorted(counts.items()):
        print(f"  {what}: {when} the update in {n} of {args.runs}")


if __name__ == "__main__":
    main()
