"""Which names a function binds and reads (cst/syntax.py): an attribute or subscript
target (`opt.learning_rate = lr`, `x[0] = v`) reads its base, it binds nothing."""

from __future__ import annotations

import libcst as cst

from tf1gradfix.cst.syntax import bound_names, free_names


def test_an_attribute_or_subscript_target_binds_no_name():
    func = cst.parse_statement("def f():\n    opt.learning_rate = lr\n    rows[0] = 1\n    a, (b, *c) = t\n"
                               "    for i, row in enumerate(rows):\n        pass\n    with g() as (u, v):\n        pass\n")
    assert free_names(func) == {"opt", "lr", "rows", "t", "enumerate", "g"}
    assert bound_names(cst.parse_statement("model.step = step + 1\n")) == set()
    assert bound_names(cst.parse_statement("x, y.z = pair\n")) == {"x"}
