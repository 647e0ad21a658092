"""The rule catalog, loaded from the TOML tables of `rules/` (tf1gradfix/rules/__init__.py)."""

from __future__ import annotations

import fnmatch
import functools
import os

from tf1gradfix.records import field, record
from tf1gradfix.rules.compiled import kept

SAFETIES = ("safe", "proven", "manual")   # fixed safely, fixable with proof, manual

TF_ROOT = "tensorflow"
# Modules a name bound by assignment (`tf = tf.compat.v1`) is followed into by the
# name resolution; the prefilter follows the same ones.
ASSIGNABLE_MODULES = frozenset({"tensorflow", "tensorflow.compat.v1"})
_V1_PREFIXES = ("tensorflow.compat.v1.", "tensorflow._api.v2.compat.v1.")


def normalize(qualified: str) -> str | None:
    """`tensorflow.compat.v1.X` -> `tensorflow.X`; anything outside TensorFlow -> None."""
    for prefix in _V1_PREFIXES:
        if qualified.startswith(prefix):
            return TF_ROOT + "." + qualified[len(prefix):]
    if qualified == TF_ROOT or qualified.startswith(TF_ROOT + "."):
        return qualified
    if qualified.startswith("keras."):
        return qualified
    return None


@record(frozen=True)
class Rule:
    code: str
    name: str
    title: str
    safety: str
    message: str
    explanation: str
    before: str
    after: str
    symbols: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    receiver: str | None = None
    renames: bool = False
    reported_by: str | None = None  # a stage that reports it (no matcher), e.g. "restructure"
    split_from: str | None = None   # the code it was part of: that code still selects and ignores it
    valid: tuple[str, ...] = ()     # programs it must not report (a stage's rule: tests run it on each)
    invalid: tuple[str, ...] = ()   # programs it must report, each once
    after_tf1: bool = False         # `after` is TF1 the user writes so that `rewrite` restructures it


@record(frozen=True)
class Catalog:
    rules: tuple[Rule, ...]
    renames: dict[str, str]
    kinds: dict[str, tuple[str, ...]]
    method_results: dict[str, str]
    by_code: dict[str, Rule] = field(default_factory=dict)
    exact_symbols: dict[str, tuple[Rule, str]] = field(default_factory=dict)
    glob_symbols: tuple[tuple[str, Rule], ...] = ()
    # TF2 names of renames a file that stays TF1 cannot take (renames.toml: restructured_only)
    restructured_only: frozenset[str] = frozenset()

    def rule(self, code: str) -> Rule | None:
        """The rule with this code, or with this name (`explain placeholder`)."""
        found = self.by_code.get(code.upper())
        if found is None:
            found = next((r for r in self.rules if r.name == code.lower()), None)
        return found

    def unknown_prefixes(self, prefixes) -> list[str]:
        """The code prefixes (of --select, --ignore or a setting) that match no rule."""
        return [p for p in prefixes if p != "ALL" and not any(r.code.startswith(p) for r in self.rules)]

    def symbol_rule(self, qualified: str) -> tuple[Rule, str] | None:
        """The rule whose symbol pattern matches `qualified` most specifically."""
        hit = self.exact_symbols.get(qualified)
        if hit is not None:
            return hit
        for pattern, rule in self.glob_symbols:
            if matches(qualified, pattern):
                return rule, pattern
        return None

    def tf1_spelling(self, qualified: str, spelled: str | None) -> bool:
        """`spelled` names `qualified` through `compat.v1.` and its rename is one a file that
        stays TF1 cannot take (`tf.compat.v1.set_random_seed`): that spelling is the one the
        rename writes there, runs under both TensorFlows, and needs no rename."""
        target = self.renames.get(qualified)
        return (target is not None and target in self.restructured_only
                and spelled is not None and ".compat.v1." in f".{spelled}")

    def kind_of_call(self, qualified: str) -> str | None:
        """The kind of value a call of `qualified` returns (first table entry wins)."""
        for kind, patterns in self.kinds.items():
            if any(matches(qualified, p) for p in patterns):
                return kind
        return None


def host_value(qualified: str | None) -> bool:
    """A call of `qualified` returns a host value and builds nothing (kinds.toml `host`):
    the model reads it as it reads NumPy, not as graph code."""
    return qualified is not None and any(matches(qualified, p) for p in load().kinds.get("host", ()))


def matches(name: str, pattern: str) -> bool:
    """fnmatch.fnmatchcase(name, pattern), where fnmatch compiles a regular expression only
    for a name that starts with the pattern's literal head (a cold `check` would compile
    one for every pattern it tries, a tenth of a millisecond each)."""
    head = next((i for i, char in enumerate(pattern) if char in "*?["), None)
    if head is None:
        return name == pattern
    return name.startswith(pattern[:head]) and fnmatch.fnmatchcase(name, pattern)


def _read(name: str) -> dict:
    try:   # (here: a kept catalog spares a cold start importing it, see compiled.py)
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads(_rules_text(name))


def _rules_text(name: str) -> str:
    """A rule table's text: from the tables' folder (importlib.resources costs a tenth of
    a cold start to import), else, for a package not on a file system, through
    importlib.resources."""
    from tf1gradfix.rules import tables_folder

    folder = tables_folder()
    if folder is not None:
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            return handle.read()
    from importlib import resources

    return resources.files("tf1gradfix").joinpath("_rules", name).read_text("utf-8")


@functools.lru_cache(maxsize=None)
@kept("catalog")
def load() -> Catalog:
    codes = _read("codes.toml")
    rules = []
    for raw in codes["rule"]:
        if raw["safety"] not in SAFETIES:
            raise ValueError(f"rule {raw['code']}: unknown safety {raw['safety']!r}")
        rules.append(
            Rule(
                code=raw["code"],
                name=raw["name"],
                title=raw["title"],
                safety=raw["safety"],
                message=raw["message"],
                explanation=raw["explanation"].strip(),
                before=raw["before"].strip("\n"),
                after=raw["after"].strip("\n"),
                symbols=tuple(raw.get("symbols", ())),
                methods=tuple(raw.get("methods", ())),
                receiver=raw.get("receiver"),
                renames=bool(raw.get("renames", False)),
                reported_by=raw.get("reported_by"),
                split_from=raw.get("split_from"),
                valid=tuple(raw.get("valid", ())),
                invalid=tuple(raw.get("invalid", ())),
                after_tf1=raw.get("after_in") == "tf1",
            )
        )
    # Renames proven by identity (generated: the TF1 object *is* the TF2 one), then the hand table's.
    renames = {f"tensorflow.{k}": f"tensorflow.{v}"
               for table, key in (("tf1_same_object.toml", "same_object"), ("renames.toml", "renames"))
               for k, v in _read(table)[key].items()}
    kinds_table = _read("kinds.toml")
    only = frozenset(f"tensorflow.{renames[f'tensorflow.{k}'][len('tensorflow.'):]}"
                     for k in _read("renames.toml").get("restructured_only", ()))
    exact, globs = _index_symbols(rules, renames)
    return Catalog(
        rules=tuple(rules),
        renames=renames,
        kinds={k: tuple(v) for k, v in kinds_table["kinds"].items()},
        method_results=dict(kinds_table["method_results"]),
        by_code={r.code: r for r in rules},
        exact_symbols=exact,
        glob_symbols=globs,
        restructured_only=only,
    )


def _specificity(pattern: str) -> tuple[int, int]:
    """Exact names beat globs; longer literal prefixes beat shorter ones."""
    literal = pattern.split("*", 1)[0]
    return (0 if "*" in pattern else 1, len(literal))


def _index_symbols(rules: list[Rule], renames: dict[str, str]):
    """Exact names in a dict for one lookup; glob patterns, most specific first."""
    exact: dict[str, tuple[Rule, str]] = {}
    globs: list[tuple[str, Rule]] = []
    for rule in rules:
        if rule.renames:
            for name in renames:
                exact[name] = (rule, name)
        for pattern in rule.symbols:
            if "*" in pattern:
                globs.append((pattern, rule))
            else:
                exact[pattern] = (rule, pattern)
    globs.sort(key=lambda item: _specificity(item[0]), reverse=True)
    return exact, tuple(globs)
