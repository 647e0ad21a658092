"""The rule catalog as data: codes, symbol renames, name kinds.

These TOML tables ship inside the installed package as ``tf1gradfix.rules``;
changing a rename or a rule's wording means editing a table, not code.
"""
