"""How much does `tf1gradfix verify` cost compared with just running both programs?

For a few fixture pairs, prints the wall time of a verification next to the
time of running the original (plain tensorflow.compat.v1, no tracing) and
then the migrated program one after the other.  The verifier runs both sides
at once, so on a machine with two free cores the ratio should be at or
below 1.0x; tracing costs (extra fetches, eager tf.function bodies) push it
up.  Prints figures only.

    python benchmarks/verify_overhead.py [SCENARIO/NAME ...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tf1gradfix.verify.orchestrate import verify_pair  # noqa: E402

FIXTURES = ROOT / "fixtures" / "verify"
DEFAULT_PAIRS = ["dev_linear_sgd/migrated", "dev_adam_probe/migrated", "stop_gradient_product/migrated",
                 "embedding_row_mask/migrated"]

PLAIN_V1 = ("import os, runpy, sys; import tensorflow.compat.v1 as v1; v1.disable_v2_behavior(); "
            "sys.modules['tensorflow'] = v1; sys.argv = [sys.argv[1]]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")


def _timed(cmd, cwd, env) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def measure(pair: str) -> tuple[float, float, float, str]:
    scenario, name = pair.split("/")
    folder = FIXTURES / scenario
    original, migrated = folder / "original.py", folder / f"{name}.py"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
    t_orig = _timed([sys.executable, "-c", PLAIN_V1, str(original)], folder,
                    dict(env, TF_USE_LEGACY_KERAS="1"))
    env.pop("TF_USE_LEGACY_KERAS", None)
    t_mig = _timed([sys.executable, str(migrated)], folder, env)
    start = time.perf_counter()
    result = verify_pair(original, migrated, rtol=1e-3, atol=1e-6, timeout=300)
    t_verify = time.perf_counter() - start
    return t_orig, t_mig, t_verify, result.verdict


def main(argv: list[str]) -> None:
    pairs = argv or [p for p in DEFAULT_PAIRS if (FIXTURES / p.split("/")[0]).is_dir()]
    print(f"{'pair':<38} {'original':>9} {'migrated':>9} {'sequential':>11} {'verify':>8} {'ratio':>6}  verdict")
    total_seq = total_ver = 0.0
    for pair in pairs:
        t_orig, t_mig, t_verify, verdict = measure(pair)
        seq = t_orig + t_mig
        total_seq, total_ver = total_seq + seq, total_ver + t_verify
        print(f"{pair:<38} {t_orig:>8.1f}s {t_mig:>8.1f}s {seq:>10.1f}s {t_verify:>7.1f}s "
              f"{t_verify / seq:>5.2f}x  {verdict}")
    if total_seq:
        print(f"{'total':<38} {'':>9} {'':>9} {total_seq:>10.1f}s {total_ver:>7.1f}s "
              f"{total_ver / total_seq:>5.2f}x")
    print(f"(cpu cores available: {os.cpu_count()}; the two sides overlap only if two are free)")


if __name__ == "__main__":
    main(sys.argv[1:])
