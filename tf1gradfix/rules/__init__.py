"""The rule catalog's loaders; the tables they read are data, in the top-level `rules/`.

Changing a rename or a rule's wording means editing a table, not code. A checkout
reads the tables where they are, `rules/` beside this package; a wheel carries the
same files inside the package, as `tf1gradfix/_rules` (setup.cfg's package_dir), so
an installed tool reads them from there.
"""

from __future__ import annotations

import functools
import os

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tf1gradfix/


@functools.lru_cache(maxsize=None)
def tables_folder(package: str = _PACKAGE) -> str | None:
    """The folder holding the rule tables of the tool in `package` (its tf1gradfix/): an
    installed copy's `_rules`, else a checkout's `rules/` beside it (None: the package is
    not on a file system)."""
    folders = (os.path.join(package, "_rules"), os.path.join(os.path.dirname(package), "rules"))
    return next((folder for folder in folders if os.path.isfile(os.path.join(folder, "codes.toml"))), None)
