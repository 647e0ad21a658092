"""Prove (or refute) that a migrated TF2 program computes what its TF1 original did.

Stages, one module each: ``runner_v1``/``runner_v2`` (subprocesses that run
and trace each side), ``side_runs`` (start both, timeouts), ``orchestrate`` (verdict),
``compare`` (tolerances), ``report`` (terminal, JSON, JUnit, Markdown, plot),
``command`` (CLI).  This package never imports TensorFlow in the calling
process.
"""
