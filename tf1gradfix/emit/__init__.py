"""Emission: writing the TF2 program (and the rename-only fixes) from the model."""
