"""`--shard K/N`: one of N deterministic shares of the files, so a large tree proves on a
CI matrix of N jobs, each proving (and writing) only its share.

A folder is never split (a script is proven with the modules beside it); folders go,
largest first, to the share holding the fewest files so far, in path order on ties: the
same tree gives every job the same partition, whatever order the files were found in.
"""

from __future__ import annotations

import os


def share(files: list[str], k: int, n: int) -> list[str]:
    """The files of share `k` (1-based) of `n`, in their given order."""
    folders: dict[str, int] = {}
    for path in files:
        folder = os.path.dirname(os.path.abspath(path))
        folders[folder] = folders.get(folder, 0) + 1
    sizes = [0] * n
    owner: dict[str, int] = {}
    for folder, count in sorted(folders.items(), key=lambda kv: (-kv[1], kv[0])):
        index = min(range(n), key=lambda i: (sizes[i], i))
        owner[folder] = index
        sizes[index] += count
    return [path for path in files if owner[os.path.dirname(os.path.abspath(path))] == k - 1]
