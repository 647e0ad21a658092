"""How `rewrite` time grows with the number of session blocks in one file: a generated
program of N blocks (each its own graph: a placeholder, a variable, a loss, a train op
and a `with tf.Session()` that trains and prints), rewritten in process (no proof, nothing
written), for N = 1000, 2000, 4000 by default. A linear rewrite doubles its time when N
doubles; the ratios printed say how far it is from that. Times are the rewriting
process's CPU seconds, so other load on the machine shows less. The file must also stay within
the size limit, which the measurement lifts.

    .venv/bin/python benchmarks/session_blocks.py [--blocks 1000 2000 4000] [--timeout 300]

Prints figures only.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BLOCK = """
tf.reset_default_graph()
inp_{n} = tf.placeholder(tf.float32, [None, 2])
weight_{n} = tf.Variable(tf.ones([2, 1]) * {scale}, name="weight_{n}")
cost_{n} = tf.reduce_mean(tf.square(tf.matmul(inp_{n}, weight_{n})))
train_{n} = tf.train.GradientDescentOptimizer(0.01).minimize(cost_{n})
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    _, seen = sess.run([train_{n}, cost_{n}], feed_dict={{inp_{n}: data}})
    print({n}, seen)
"""


def program(blocks: int) -> str:
    head = "import numpy as np\nimport tensorflow as tf\n\ndata = np.ones((4, 2), np.float32)\n"
    return head + "".join(BLOCK.format(n=n, scale=1 + n % 7) for n in range(blocks))


MEASURE = r"""
import sys, time
from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter
data = open(sys.argv[1], "rb").read()
start = time.process_time()   # (CPU time: the machine may be busy with other work)
result = process_source("blocks.py", data, CodeFilter())
elapsed = time.process_time() - start
state = "error" if result.error else ("rewritten" if result.new_source else "unchanged")
print(f"{elapsed:.3f}\t{state}")
"""


def measure(blocks: int, timeout: float, folder: Path) -> tuple[float | None, str]:
    path = folder / f"blocks_{blocks}.py"
    path.write_text(program(blocks))
    try:
        done = subprocess.run([sys.executable, "-c", MEASURE, str(path)], cwd=ROOT, capture_output=True,
                              text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None, f"over {timeout:g} s"
    seconds, state = done.stdout.strip().splitlines()[-1].split("\t")
    return float(seconds), state


def main(argv: list[str] | None = None) -> int:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, nargs="+", default=[1000, 2000, 4000])
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    previous = None
    with tempfile.TemporaryDirectory() as tmp:
        for blocks in args.blocks:
            seconds, state = measure(blocks, args.timeout, Path(tmp))
            size = len(program(blocks).encode()) // 1024
            ratio = f"\tx{seconds / previous[1]:.2f} for x{blocks / previous[0]:.2f} blocks" \
                if seconds and previous and previous[1] else ""
            shown = f"{seconds:.2f} s" if seconds is not None else "-"
            print(f"{blocks} blocks ({size} KiB)\t{shown}\t{state}{ratio}", flush=True)
            previous = (blocks, seconds) if seconds else None
    return 0


if __name__ == "__main__":
    sys.exit(main())
