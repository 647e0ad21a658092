"""Which rules could fire on a source, read off its identifiers without parsing.

Detection resolves a name through the imports, so every part of a qualified
name it matches (`tensorflow.train.AdamOptimizer`) is written somewhere in
the file as an identifier: in the import or in the attribute chain. A rule
whose symbol has a part the file never spells cannot fire, nor can a method
rule whose method is never spelled or whose receiver kind cannot be made.
This is a necessary condition, checked on tokens of the raw bytes: when it
says nothing can fire, LibCST need not parse the text at all.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from tf1gradfix import catalog as catalog_module
from tf1gradfix.catalog import Catalog

# Runs of ASCII identifier characters. TensorFlow's names are ASCII, so an
# identifier equal to, starting with or ending with one of them yields a run
# that does too; extra runs (from strings, comments, non-ASCII names) only
# make more rules possible, never fewer.
_TOKEN = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_WILDCARDS = "*?["


@dataclass(frozen=True)
class Spelling:
    """What a name pattern needs written in the file: whole parts, starts and ends of parts."""

    parts: frozenset[str]
    starts: tuple[str, ...] = ()
    ends: tuple[str, ...] = ()

    @classmethod
    def of(cls, pattern: str) -> Spelling:
        """An fnmatch pattern over dotted names (`*` may span dots): a part between dots
        with no wildcard is a whole part of every match; one with a wildcard still
        fixes how the first matched part starts and the last one ends."""
        parts, starts, ends = set(), [], []
        for part in pattern.split("."):
            cut = min((part.index(c) for c in _WILDCARDS if c in part), default=None)
            if cut is None:
                parts.add(part)
                continue
            if cut:
                starts.append(part[:cut])
            if "?" not in part and "[" not in part and not part.endswith("*"):
                ends.append(part[part.rindex("*") + 1:])
        return cls(frozenset(parts), tuple(starts), tuple(ends))

    def written_in(self, tokens: frozenset[str]) -> bool:
        return (self.parts <= tokens
                and all(any(t.startswith(s) for t in tokens) for s in self.starts)
                and all(any(t.endswith(e) for t in tokens) for e in self.ends))


@dataclass(frozen=True)
class Possible:
    codes: frozenset[str]  # rules that could fire
    kinds: frozenset[str]  # kinds of value a call could make (kinds.toml)

    @property
    def anything(self) -> bool:
        """Whether the rewrite could find anything: a rule, or a session to restructure."""
        return bool(self.codes) or "session" in self.kinds


class Prefilter:
    def __init__(self, catalog: Catalog):
        self._symbols = [(rule.code, Spelling.of(p)) for rule in catalog.rules
                         for p in rule.symbols + (tuple(catalog.renames) if rule.renames else ())]
        self._methods = [(rule.code, method, rule.receiver) for rule in catalog.rules for method in rule.methods]
        self._kinds = [(kind, Spelling.of(p)) for kind, patterns in catalog.kinds.items() for p in patterns]
        self._method_results = dict(catalog.method_results)

    def possible(self, data: bytes) -> Possible:
        tokens = frozenset(t.decode("ascii") for t in _TOKEN.findall(data))
        kinds = {kind for kind, spelling in self._kinds if spelling.written_in(tokens)}
        if "optimizer" in kinds:  # `opt.minimize(...)` makes what method_results says
            kinds |= {kind for method, kind in self._method_results.items() if method in tokens}
        codes = {code for code, spelling in self._symbols if spelling.written_in(tokens)}
        codes |= {code for code, method, receiver in self._methods if method in tokens and receiver in kinds}
        return Possible(frozenset(codes), frozenset(kinds))


@functools.lru_cache(maxsize=None)
def load() -> Prefilter:
    """The prefilter of the shipped rule tables."""
    return Prefilter(catalog_module.load())
