"""One module per TF1 construct: how it is recognised in a graph program and what it becomes."""
