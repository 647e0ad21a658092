"""Driving files through the pipeline: per-file engine, batches, cache, source I/O."""
