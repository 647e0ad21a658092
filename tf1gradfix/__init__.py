"""tf1gradfix: rewrite TensorFlow 1 graph programs into TF2 and prove the rewrite."""

__version__ = "0.1.0"
