"""A model module that imports another module of its folder, one the script does not
import itself, in a form not read as that module's code before it (here an alias), is
refused as the README says."""

from __future__ import annotations

from tf1gradfix.cli.main import main

FILES = {
    "blocks.py": "import tensorflow as tf\n\n\ndef affine(x, n, label):\n"
                 "    k = tf.get_variable(label, [int(x.shape[-1]), n])\n    return tf.matmul(x, k)\n",
    "net.py": "import tensorflow as tf\nimport blocks as parts\n\n\nclass Regressor:\n    def __init__(self):\n"
              "        self.inp = tf.placeholder(tf.float32, [None, 5])\n"
              "        self.pred = parts.affine(self.inp, 1, \"k\")\n",
    "fit.py": "import numpy as np\nimport tensorflow as tf\nfrom net import Regressor\n\nmodel = Regressor()\n"
              "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
              "    print(sess.run(model.pred, {model.inp: np.ones([3, 5])}))\n",
}


def test_a_model_module_importing_a_module_the_script_does_not_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    code = main(["rewrite", "--no-verify", "."])
    out = capsys.readouterr().out
    assert "TFG923" in out and "module `net` imports `blocks`, another module of its folder" in out, out
    assert {name: (tmp_path / name).read_text() for name in FILES} == FILES and code == 1
