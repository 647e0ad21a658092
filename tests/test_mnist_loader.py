"""TF1's MNIST tutorial loader (constructs/mnist_loader.py, rules/helpers.toml
`mnist_data_sets`) and host values from the tensorflow namespace (kinds.toml `host`).

The fast tests check what the rewrite writes for each import form and what it
refuses; the `tf` tests check the helper against the verifier's model of TF 1.15's
loader (verify/mnist_data.py), array for array, and that the verifier's NumPy
reseeding is the same on both sides. Fixtures mnist_softmax_loader and
mnist_two_layer_uint8 are proven EQUIVALENT, and their wrong helpers DIVERGED, in
test_restructure_fixtures.py and test_verify_fixtures.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tf1gradfix.run.engine import process_source
from tf1gradfix.run.findings import CodeFilter
from tf1gradfix.verify import mnist_data

ROOT = Path(__file__).resolve().parent.parent
GRAPH = """
x = tf.placeholder(tf.float32, [None, 784])
w = tf.Variable(tf.zeros([784, 10]), name="w")
out = tf.reduce_sum(tf.matmul(x, w))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(out, feed_dict={x: data.train.next_batch(10)[0]}))
"""


def rewrite(head: str, tail: str = GRAPH) -> tuple[str | None, list[str]]:
    """The rewrite of `head` + a small graph reading `data`, and its refusals (code: message)."""
    result = process_source("p.py", (textwrap.dedent(head).lstrip() + tail).encode(), CodeFilter())
    refused = [f"{f.code}: {f.message}" for f in result.findings if f.code.startswith("TFG9")]
    return (result.new_source.decode() if result.new_source else None), refused


@pytest.mark.parametrize("head, call", [
    ('from tensorflow.examples.tutorials.mnist import input_data\ndata = input_data.read_data_sets("d")',
     'data = read_data_sets("d")'),
    ('import tensorflow.examples.tutorials.mnist.input_data as reader\ndata = reader.read_data_sets("d", False, True)',
         'data = read_data_sets("d", False, True)'),
    ('from tensorflow.examples.tutorials import mnist\ndata = mnist.input_data.read_data_sets("d", one_hot=True)',
     'data = read_data_sets("d", one_hot=True)'),
    ('from tensorflow.examples.tutorials.mnist.input_data import read_data_sets as load\ndata = load("d")',
     'data = load("d")'),
], ids=["from_import", "import_as", "package", "function"])
def test_each_import_form_becomes_the_helper_defined_once(head, call):
    out, refused = rewrite("import tensorflow as tf\n" + head)
    assert refused == [] and out is not None
    assert "tensorflow.examples" not in out and "input_data.read_data_sets(" not in out and call in out
    name = call.split("= ")[1].split("(")[0]
    assert out.count(f"def {name}(") == 1 and out.count("class MnistDataSet:") == 1
    assert out.index("import tensorflow as tf") < out.index("class MnistDataSet") < out.index(call)


def test_the_helper_spells_the_modules_numpy_and_adds_what_is_missing():
    out, _ = rewrite("""
        from __future__ import print_function
        import numpy
        import tensorflow as tf
        from tensorflow.examples.tutorials.mnist import input_data
        data = input_data.read_data_sets("d")
    """)
    assert out.startswith("from __future__ import print_function\n\nimport collections\n\nimport numpy\n")
    assert "numpy.random.seed(seed)" in out and "import numpy as np" not in out
    rebound, _ = rewrite("""
        import numpy as np
        import tensorflow as tf
        from tensorflow.examples.tutorials.mnist import input_data
        np = None
        MnistDataSet = None
        data = input_data.read_data_sets("d")
    """)
    assert "import numpy as np_2\n" in rebound and "np_2.random.seed(seed)" in rebound
    assert "class MnistDataSet_2:" in rebound


def test_a_method_calling_the_loader_calls_the_helper():
    out, refused = rewrite("""
        import tensorflow as tf
        from tensorflow.examples.tutorials.mnist import input_data


        def load():
            return input_data.read_data_sets("d", one_hot=True)


        data = load()
    """)
    assert refused == [] and '    return read_data_sets("d", one_hot=True)\n' in out


def test_a_loader_call_after_the_session_closed_is_host_code_of_its_section():
    """Not a new section of graph code (which would build nothing: TFG918)."""
    out, refused = rewrite("""
        import tensorflow as tf
        from tensorflow.examples.tutorials.mnist import input_data
        data = input_data.read_data_sets("d", one_hot=True)
    """, GRAPH.lstrip() + 'more = input_data.read_data_sets("e")\nprint(more.test.labels[:3])\n')
    assert refused == [] and out.endswith('more = read_data_sets("e")\nprint(more.test.labels[:3])\n')


@pytest.mark.parametrize("head, reason", [
    ('data = input_data.read_data_sets("d", False, True, tf.float64)', "TFG910: `read_data_sets` with a `dtype="),
    ('data = input_data.read_data_sets("d", one_hot=True)\ndata.train.next_batch(5, True)',
     "TFG910: `next_batch` with `fake_data`"),
    ('data = input_data.read_data_sets("d", fake_data=flags.fake)', "TFG910: `read_data_sets` with `fake_data`"),
    ('tf.set_random_seed(0)\ndata = input_data.read_data_sets("d", seed=0)', "TFG910: `read_data_sets` without `seed=`"),
    ('data = input_data.read_data_sets("d", 0, 0, tf.uint8, 0, 0, 0, "u", 0)', "TFG910: `read_data_sets` with *args"),
    ('data = input_data.read_data_sets("d")\nprint(input_data)', "TFG910: `input_data`, TF1's MNIST tutorial"),
])
def test_what_the_helper_does_not_reproduce_is_refused(head, reason):
    out, refused = rewrite("import tensorflow as tf\nfrom tensorflow.examples.tutorials.mnist import input_data\n" + head)
    assert out is None or "tensorflow.examples" in out
    assert any(r.startswith(reason) for r in refused), refused


@pytest.mark.parametrize("head", [
    'data = input_data.read_data_sets("d", dtype=tf.uint8, reshape=False, validation_size=0)',
    'tf.set_random_seed(3)\ndata = input_data.read_data_sets("d", seed=3)',
    'data = input_data.read_data_sets("d")\nbatch = data.train.next_batch(5, False, shuffle=False)',
])
def test_what_it_reproduces_is_rewritten(head):
    out, refused = rewrite("import tensorflow as tf\nfrom tensorflow.examples.tutorials.mnist import input_data\n" + head)
    assert refused == [] and out is not None and "read_data_sets(\"d\"" in out


def test_host_values_from_the_tensorflow_namespace_are_host_code():
    """A file check, a checkpoint path, a flag and a log line build nothing in the graph:
    they were graph statements (TFG921) or graph values used outside a run (TFG911)."""
    program = textwrap.dedent("""
        import numpy as np
        import tensorflow as tf
        cached = tf.io.gfile.exists("/no/such/file.npy")
        latest = tf.train.latest_checkpoint("/no/such/folder")
        data = np.ones([4, 784], np.float32) if latest is None else np.load("/no/such/file.npy")
    """) + GRAPH.replace("data.train.next_batch(10)[0]", "data")
    result = process_source("p.py", program.encode(), CodeFilter())
    out = result.new_source.decode()
    assert 'cached = tf.io.gfile.exists("/no/such/file.npy")\n' in out and "print(compute_out(data).numpy())" in out
    out, refused = rewrite("""
        import tensorflow as tf
        from tensorflow.examples.tutorials.mnist import input_data
        tf.flags.DEFINE_integer("batch", 10, "images per step")
        tf.logging.set_verbosity(tf.logging.INFO)
        data = input_data.read_data_sets("d")
    """)
    assert refused == []   # (tf.flags becomes absl.flags: constructs/flags.py; the log line TF1's own logging)
    assert "tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)\n" in out


def test_the_tf1_models_numpy_seed_is_tf1s_get_seed():
    """`numpy.random.seed(seed1 if seed is None else seed2)` of TF 1.15's get_seed."""
    assert mnist_data.numpy_seed(None, None) is None
    assert mnist_data.numpy_seed(None, 5) == 5 and mnist_data.numpy_seed(7, None) == 7 == mnist_data.numpy_seed(7, 5)
    assert mnist_data.numpy_seed(0, 0) == 2**31 - 1 and mnist_data.numpy_seed(0, None) == 0
    assert mnist_data.numpy_seed(2**33 + 5, None) == (2**33 + 5) % (2**31 - 1)


def test_the_verifier_reseeds_numpy_without_a_seed_the_same_on_both_sides(monkeypatch):
    from tf1gradfix.verify import runner_common

    monkeypatch.setattr(np.random, "seed", np.random.seed)
    draws = []
    for _ in range(2):   # (the same calls on another side, in another process)
        monkeypatch.setattr(np.random, "seed", np.random.mtrand.seed)
        runner_common.seed_python()
        np.random.seed()
        first = np.random.rand()
        np.random.seed(None)
        draws.append((first, np.random.rand()))
    assert draws[0] == draws[1] and draws[0][0] != draws[0][1]


SIDE = """
import os, sys
import numpy as np
out = sys.argv[2]
from tf1gradfix.verify import runner_common as rc, mnist_data
if sys.argv[1] == "original":
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    tf.set_random_seed(rc.SEED)   # (the runner's own graph seed: not the program's)
    rc.seed_python()
    mnist_data.install_v1(tf)
    from tensorflow.examples.tutorials.mnist import input_data
    load = input_data.read_data_sets
else:
    import tensorflow as tf
    rc.seed_python()
    mnist_data.install_v2(tf)
    namespace = {}
    exec(sys.stdin.read(), namespace)
    load = namespace["read_data_sets"]
values = {}
for k, settings in enumerate([dict(one_hot=True), dict(reshape=False, validation_size=1000, seed=7),
                              dict(dtype=tf.uint8, validation_size=0), dict(seed=0), dict(seed=2**33 + 5)]):
    data = load("MNIST_data/", **settings)
    values[f"{k} sizes"] = [data.train.num_examples, data.validation.num_examples, data.test.num_examples]
    values[f"{k} draw"] = np.random.rand(3)
    for step in range(12):
        values[f"{k} {step}"] = data.train.next_batch(1700, shuffle=step != 3) + (data.train.epochs_completed,)
    values[f"{k} validation"] = data.validation.next_batch(50, shuffle=False)
    values[f"{k} test"] = (data.test.images[:20], data.test.labels)
    values[f"{k} after"] = np.random.randn(4)
import pickle
pickle.dump(values, open(out, "wb"))
"""


@pytest.mark.tf
def test_the_helper_gives_the_tf1_models_arrays_and_numpy_draws(tmp_path):
    """Splits, dtypes, shapes, batches across epoch boundaries (shuffled or not) and the
    NumPy draws after the loader, bit for bit, for each setting the rewrite accepts."""
    import pickle
    import tomllib

    row = tomllib.loads((ROOT / "rules/helpers.toml").read_text())["helper"]["mnist_data_sets"]
    helper = "import collections\nimport numpy as np\nimport tensorflow as tf\n" + row["text"].format(
        name="read_data_sets", dataset="MnistDataSet", np="np", collections="collections", tf="tf")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(ROOT))
    for side in ("original", "migrated"):
        subprocess.run([sys.executable, "-c", SIDE, side, str(tmp_path / side)], input=helper, text=True, env=env,
                       check=True, capture_output=True, timeout=300)
    original, migrated = (pickle.load(open(tmp_path / side, "rb")) for side in ("original", "migrated"))
    assert original.keys() == migrated.keys()
    for key in original:
        for a, b in zip(original[key], migrated[key]) if isinstance(original[key], tuple) else [(original[key],
                                                                                               migrated[key])]:
            a, b = np.asarray(a), np.asarray(b)
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), key
