"""`layout.fit` lays a generated statement out as black would (tf1gradfix/cst/layout.py):
each statement here, too long for its line, is fitted at its column and compared with
black's layout of the same statement there."""

from __future__ import annotations

import pytest

from tf1gradfix.cst import layout

STATEMENTS = [
    # one operator of the lowest precedence, a bracket closing the line: split there
    "cost = cost + self.decay * (tf.nn.l2_loss(self.w_in) + tf.nn.l2_loss(self.w_out))",
    "cost = cost + self.decay_coefficient * tf.nn.l2_loss(self.w_in, self.w_out_and_more_more)",
    "return total + self.weight_of_penalty * tf.reduce_sum([tf.abs(w) for w in self.kernels_x])",
    # two of them, or no bracket at the end: inside parentheses, one operand a line
    "cost = cost + self.decay + (tf.nn.l2_loss(self.w_in) + tf.nn.l2_loss(self.w_out))",
    "residual = tf.matmul(inputs_of_the_batch, weights_of_layer) + bias_of_layer - labels_of_it",
    "scores = first_score_of_the_model_here * second_score_of_the_model_here_too_long_a",
    # calls, as before
    "hidden = tf.nn.leaky_relu(tf.matmul(inputs, self.weights_one) + self.bias_one, alpha=0.2)",
    # a method called without arguments on a call: the call's own brackets split
    "value = train_step(batch_of_ids, batch_of_readings, [1, 2, 1], temperature=np.float64(2.5)).numpy()",
    # a comprehension split at its clauses, and a clause still too long split at its bracket
    "decay = tf.add_n([tf.nn.l2_loss(w) for w in [conv_a.kernel, conv_a.bias, head_layer.kernel, "
    "head_layer.bias, extra_layer.kernel] if \"kernel\" in w.name])",
]


def _black(text: str, indent: int) -> str:
    import black   # (the `test` extra)

    wrapped = "".join(f"{'    ' * k}if x:\n" for k in range(indent // 4)) + " " * indent + text + "\n"
    out = black.format_str(wrapped, mode=black.Mode()).splitlines()[indent // 4:]
    return "\n".join(line[indent:] for line in out)


@pytest.mark.parametrize("indent", [8, 12])
@pytest.mark.parametrize("text", STATEMENTS)
def test_a_long_statement_is_laid_out_as_black_lays_it_out(text, indent):
    assert indent + len(text) > layout.WIDTH
    assert layout.fit(text, indent) == _black(text, indent)


def test_a_loop_header_grown_by_attributes_is_laid_out_again():
    """A model class's step method reads its loop's lists through `self`: the header the
    rewrite laid out for the plain names is laid out again where it no longer fits; a
    header the user laid out stays as it is."""
    import libcst as cst

    def loop(header: str) -> cst.For:
        module = cst.parse_module("class _:\n    def f(self):\n" + "\n".join(
            "        " + line for line in header.splitlines()) + "\n            pass\n")
        return next(n for n in layout._descend(module) if isinstance(n, cst.For))

    before = loop("for (k, w), kernel, norm in zip(enumerate(widths), kernels, norms):")
    after = loop("for (k, w), kernel, norm in zip(enumerate(self.widths), self.kernels_list, self.norms_list):")
    header = cst.Module([]).code_for_node(layout.refit(before, after, 8)).split("pass")[0]
    assert header == ("for (k, w), kernel, norm in zip(\n    enumerate(self.widths),"   # (indented by its block)
                      " self.kernels_list, self.norms_list\n):\n    ")
    own = loop("for (k, w), kernel, norm in zip(enumerate(widths),\n                                "
               "kernels, norms):")
    code = cst.Module([]).code_for_node
    assert code(layout.refit(own, after, 8)) == code(after)


def test_a_comprehension_clause_too_long_for_its_line_is_split_as_black_splits_it():
    """Each clause of a split comprehension on a line of its own, and a clause still too long
    split at its bracket (black's layout; the clause was left at 89 columns before); a
    comprehension written over several lines by the rewrite is rejoined before it is laid out."""
    text = ("kernels = tf.add_n([tf.nn.l2_loss(w) for w in [conv2d.kernel, conv2d.bias, head_layer.kernel,"
            ' head_layer.bias] if "kernel" in w.name])')
    assert layout.fit(text, 8) == (
        'kernels = tf.add_n(\n    [\n        tf.nn.l2_loss(w)\n        for w in [\n            conv2d.kernel,\n'
        '            conv2d.bias,\n            head_layer.kernel,\n            head_layer.bias,\n        ]\n'
        '        if "kernel" in w.name\n    ]\n)')
    assert layout.fit(layout.fit(text, 8), 8) == layout.fit(text, 8)


def test_a_call_a_shorter_keyword_fits_on_one_line_is_joined_where_black_split_it():
    from tf1gradfix.cst.layout import refit_source

    before = (b"def f(x):\n    total = tf.reduce_sum(\n        x_values_of_the_large_batch, reduction_indices=[0], keep_dims=True\n"
              b"    )\n    return total\n")
    after = before.replace(b"reduction_indices", b"axis").replace(b"keep_dims", b"keepdims")
    joined = refit_source(before, after)
    assert b"    total = tf.reduce_sum(x_values_of_the_large_batch, axis=[0], keepdims=True)\n" in joined
    assert _black_module(joined.decode()) == joined.decode()
    own = before.replace(b"(\n        x_values", b"(x_values")   # (the user's own layout: kept)
    assert refit_source(own, own.replace(b"reduction_indices", b"axis")) == own.replace(b"reduction_indices", b"axis")


def _black_module(text: str) -> str:
    import black

    return black.format_str(text, mode=black.Mode())
