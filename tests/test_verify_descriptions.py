"""TF1's descriptions of graph objects in the original's output are left out of the
printed-output comparison (verify/descriptions.py), and nothing else is. No TensorFlow:
the lines are what TF1 (tf.compat.v1, v2 behaviour disabled) printed for them."""

from __future__ import annotations

from tf1gradfix.verify import compare, descriptions
from tf1gradfix.verify.runner_common import decode_array

PRINTED = """\
hidden: Tensor("Tanh:0", shape=(?, 6), dtype=float32)
y Tensor("y:0", dtype=float32)
<tf.Variable 'body/w:0' shape=(5, 6) dtype=float32_ref>
[<tf.Tensor 'MatMul:0' shape=(?, 2) dtype=float32>, <tf.Variable 'w:0' shape=(5, 2) dtype=float32_ref>] (<tf.Tensor 'MatMul:0' shape=(?, 2) dtype=float32>,) {'k': <tf.Tensor 'MatMul:0' shape=(?, 2) dtype=float32>}
LSTMStateTuple(c=<tf.Tensor 'MatMul:0' shape=(?, 2) dtype=float32>, h=<tf.Tensor 'MatMul:0' shape=(?, 2) dtype=float32>)
Tensor("Const:0", shape=(), dtype=string) Tensor("Const_3:0", shape=(1,), dtype=bool)
Tensor("Identity:0", shape=(?, 2), dtype=float32, device=/device:CPU:0)
[<tf.Operation 'GradientDescent' type=NoOp>]
dataset is <_TensorSliceDataset element_spec=(TensorSpec(shape=(784,), dtype=tf.float32, name=None), TensorSpec(shape=(10,), dtype=tf.float32, name=None))>
<DatasetV1Adapter shapes: ((?, 784), (?, 10)), types: (tf.float32, tf.float32)>
<tensorflow.python.data.ops.iterator_ops.Iterator object at 0x7f2b4c1d9e50>
train op name: "GradientDescent"
op: "NoOp"
input: "^GradientDescent/update_w/ApplyGradientDescent"
input: "^GradientDescent/update_dense/kernel/ApplyGradientDescent"

op name: "Conv2D"
op: "Conv2D"
input: "Reshape"
attr {
  key: "strides"
  value {
    list {
      i: 1
      i: 2
    }
  }
}
attr {
  key: "T"
  value {
    type: DT_FLOAT
  }
}

"""


def _trace(stdout):
    return {"events": [], "final": {}, "stdout": stdout, "plots": None}


def _compare(original, migrated):
    return compare.compare_traces(_trace(original), _trace(migrated), decode=decode_array)


def test_tf1_formats_are_recognised():
    lines = PRINTED.splitlines()
    left = descriptions.left_out(PRINTED)
    assert left == {no for no, line in enumerate(lines, 1) if line}, [lines[n - 1] for n in range(1, len(lines) + 1)
                                                                     if lines[n - 1] and n not in left]


def test_only_tf1_descriptions_with_words_are_left_out():
    kept = [
        "w <tf.Variable 'w:0' shape=(5, 2) dtype=float32_ref> 3",     # a number printed with it
        'layer 2: Tensor("Relu:0", shape=(?, 4), dtype=float32)',       # a label holding a number
        "loss 0.25",
        'x: Tensor("x:0", shape=(None, 5), dtype=float32)',             # TF2's form, not TF1's
        'name: "model"',                                               # a name, no op's definition after it
        "conv1 done",
    ]
    assert descriptions.left_out("\n".join(kept) + "\n") == set()
    assert descriptions.left_out('conv1: Tensor("conv1/Relu:0", shape=(?, 8, 8, 4), dtype=float32)\n') == {1}


def test_static_shapes_with_an_unknown_dimension_are_left_out():
    """`print("conv", conv.shape)` while the graph is built: TF1 printed `(?, 14, 14, 32)`
    (`as_list()`: `[None, ...]`); a shape known in full is numbers, and stays compared."""
    printed = "conv (?, 14, 14, 32)\n(?,)\nflat: [None, 64] from (?, 16, 2)\nkernel (3, 2, 4)\n[3, 4]\nshape 2 (?, 8)\n"
    assert descriptions.left_out(printed) == {1, 2, 3}


def test_descriptions_are_left_out_and_said_so():
    cmp = _compare(PRINTED + "step 1 loss 0.5\n", "step 1 loss 0.5\n")
    assert not cmp.divergences
    assert cmp.printed_numbers == 2 and cmp.described == 33
    assert any("33 lines of the original's output" in note for note in cmp.notes)


def test_a_value_printed_next_to_a_description_is_still_compared():
    original = 'loss: Tensor("add:0", shape=(), dtype=float32)\nfirst loss 0.693147\n'
    assert not _compare(original, "first loss 0.693147\n").divergences
    wrong = _compare(original, "first loss 0.701000\n")
    assert wrong.first.quantity == "printed number" and "line 2" in wrong.first.describe()


def test_a_dropped_value_print_still_diverges():
    original = 'hidden: Tensor("Tanh:0", shape=(?, 6), dtype=float32)\n0 1.25\n5 0.5\naux norm 3.37\n'
    assert not _compare(original, "0 1.25\n5 0.5\naux norm 3.37\n").divergences
    dropped = _compare(original, "0 1.25\n5 0.5\n")
    assert dropped.divergences and "migrated 2" in " ".join(d.describe() for d in dropped.divergences)


def test_a_description_printed_with_a_value_is_not_hidden():
    original = "w <tf.Variable 'w:0' shape=(3,) dtype=float32_ref> 0.75\n"
    assert _compare(original, "").divergences
    assert not _compare("w words only\n" + original, "w words only\n" + original).divergences


def test_in_a_line_of_values_the_description_alone_is_taken_out():
    original = 'epoch 6 Tensor("cost:0", shape=(), dtype=float32) = 0.41 accuracy 0.8\n'
    same = _compare(original, "epoch 6 = 0.41 accuracy 0.8\n")
    assert not same.divergences and same.printed_numbers == 3
    assert any("1 line of the original's output prints values next to" in note for note in same.notes)
    # a number printed where TF1 printed the description, or a value left out with it, diverges
    assert _compare(original, "epoch 6 0.41 = 0.41 accuracy 0.8\n").divergences
    assert _compare(original, "epoch = 0.41 accuracy 0.8\n").divergences
