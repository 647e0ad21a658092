"""Detection: which TF1 symbols and constructs a source spells (no rewriting)."""
