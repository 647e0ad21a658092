"""Settings from `[tf1gradfix]` in setup.cfg or `[tool.tf1gradfix]` in pyproject.toml.

The nearest file above the current folder that has the section wins;
command-line flags win over both. A file that holds our section but cannot be
read, parsed or understood is a ConfigError naming the file (and line), never
a silent fallback to the defaults.
"""

from __future__ import annotations

import difflib

import fnmatch
import re
from pathlib import Path

from tf1gradfix.records import field, record


class ConfigError(Exception):
    """A setting the run cannot use: `file:line: error: message`."""

    def __init__(self, path: Path, message: str, line: int | None = None):
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: error: {message}")


@record
class Settings:
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    max_file_size: int | None = None  # bytes; None: source_io.MAX_FILE_BYTES
    respect_gitignore: bool = True    # folders are walked without what .gitignore leaves out
    source: str | None = None  # which file the settings came from
    root: str | None = None    # its folder: per-file-ignores patterns are relative to it
    entry_points: dict[str, tuple[str, ...]] = field(default_factory=dict)   # script -> its arguments when proven

    def arguments_for(self, path: str) -> tuple[str, ...] | None:
        """The program arguments `entry-points` gives the script (its path relative to the
        settings file's folder), or None: the command line's (after `--`)."""
        if self.root is None or not self.entry_points:
            return None
        try:
            relative = Path(path).resolve().relative_to(self.root).as_posix()
        except (ValueError, OSError):
            return None
        return self.entry_points.get(relative)

    def ignores_for(self, path: str) -> tuple[str, ...]:
        """Patterns match the path relative to the settings file's folder (as ruff's do),
        or the file name alone."""
        names = [Path(path).name]
        if self.root is not None:
            try:
                names.append(Path(path).resolve().relative_to(self.root).as_posix())
            except (ValueError, OSError):   # outside the settings' folder
                pass
        extra: list[str] = []
        for pattern, codes in self.per_file_ignores.items():
            if any(fnmatch.fnmatchcase(name, pattern) for name in names):
                extra.extend(codes)
        return tuple(extra)


KEYS = ("select", "ignore", "exclude", "max-file-size", "per-file-ignores", "respect-gitignore", "entry-points")


def _codes(value, key: str, fail) -> tuple[str, ...]:
    """Code prefixes are case-insensitive, as on the command line; one that names no
    rule is an error (a typo would otherwise select or ignore nothing, silently)."""
    from tf1gradfix.rules.catalog import load

    codes = tuple(code.upper() for code in _split(value, key, fail))
    unknown = load().unknown_prefixes(codes)
    if unknown:
        fail(key, f"`{key}`: unknown code {', '.join(map(repr, unknown))} (see `tf1gradfix rules`)")
    return codes


def _split(value, key: str, fail) -> tuple[str, ...]:
    if isinstance(value, str):
        items = value.replace("\n", ",").split(",")
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        items = value
    else:
        fail(key, f"`{key}` must be a string or a list of strings, not {value!r}")
    return tuple(item.strip() for item in items if item.strip())


def _settings(table, source: Path, text: str) -> Settings:
    """One reader for both files: `table` maps option names to values."""

    def fail(key: str, message: str):
        raise ConfigError(source, message, _line_of(text, key))

    settings = Settings(source=str(source), root=str(source.parent.resolve()))
    for key in table:
        if key not in KEYS:
            near = difflib.get_close_matches(key, KEYS, n=1)
            hint = f"did you mean `{near[0]}`? " if near else ""
            fail(key, f"unknown setting `{key}` ({hint}known: {', '.join(KEYS)})")
    if "select" in table:
        settings.select = _codes(table["select"], "select", fail)
    if "ignore" in table:
        settings.ignore = _codes(table["ignore"], "ignore", fail)
    if "exclude" in table:
        settings.exclude = _split(table["exclude"], "exclude", fail)
    if "max-file-size" in table:
        settings.max_file_size = _size(table["max-file-size"], fail)
    if "respect-gitignore" in table:
        settings.respect_gitignore = _bool(table["respect-gitignore"], "respect-gitignore", fail)
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        fail("per-file-ignores", f"`per-file-ignores` must be a table of glob = codes, not {per_file!r}")
    for pattern, codes in per_file.items():
        settings.per_file_ignores[pattern.strip()] = _codes(codes, "per-file-ignores", fail)
    entries = table.get("entry-points", {})
    if not isinstance(entries, dict) or not all(isinstance(v, (list, str)) for v in entries.values()):
        fail("entry-points", f"`entry-points` must be a table of script = [arguments], not {entries!r}")
    for script, arguments in entries.items():
        if isinstance(arguments, str):   # (an INI line: `train.py: --epochs 1`)
            import shlex

            arguments = shlex.split(arguments)
        if not all(isinstance(a, str) for a in arguments):
            fail("entry-points", f"`entry-points`: the arguments of {script!r} must be strings, not {arguments!r}")
        settings.entry_points[Path(script.strip()).as_posix()] = tuple(arguments)
    return settings


def _size(value, fail) -> int:
    """A positive whole number of bytes (an INI value is text)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        fail("max-file-size", f"`max-file-size` must be a whole number of bytes, 1 or more, not {value!r}")
    return value


def _bool(value, key: str, fail) -> bool:
    """true or false (an INI value is text, read as configparser reads booleans)."""
    if isinstance(value, str):
        import configparser  # (here: only a setup.cfg naming tf1gradfix gives text)

        if value.strip().lower() in configparser.ConfigParser.BOOLEAN_STATES:
            return configparser.ConfigParser.BOOLEAN_STATES[value.strip().lower()]
    if not isinstance(value, bool):
        fail(key, f"`{key}` must be true or false, not {value!r}")
    return value


def _line_of(text: str, key: str) -> int | None:
    """The line where `key` is set (TOML's parser and configparser do not say)."""
    match = re.search(rf"^[ \t]*[\"']?{re.escape(key)}[\"']?[ \t]*[=:]", text, re.MULTILINE)
    return text.count("\n", 0, match.start()) + 1 if match else None


def _text(path: Path) -> str | None:
    """The file's text when it may hold our settings (None: it cannot)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(path, f"cannot read: {exc.strerror or exc}") from None
    if b"tf1gradfix" not in data:  # no section of ours: skip the parser
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, f"not UTF-8 text ({exc.reason})", data[: exc.start].count(b"\n") + 1) from None


def _from_setup_cfg(path: Path) -> Settings | None:
    text = _text(path)
    if text is None:
        return None
    import configparser  # (here: only a setup.cfg naming tf1gradfix needs it)

    parser = configparser.ConfigParser(interpolation=None)  # `%` in a glob is a character, not a reference
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        line = getattr(exc, "lineno", None) or next((n for n, _ in getattr(exc, "errors", ())), None)
        raise ConfigError(path, " ".join(str(getattr(exc, "message", exc)).split()), line) from None
    if not parser.has_section("tf1gradfix"):
        return None
    table = dict(parser["tf1gradfix"])
    # `per-file-ignores` is one "glob: CODES" per line in an INI file.
    lines = [line for line in table.pop("per-file-ignores", "").splitlines() if line.strip()]
    for line in lines:
        if ":" not in line:
            raise ConfigError(path, f"per-file-ignores: {line.strip()!r} is not `glob: CODES`", _line_of(text, "per-file-ignores"))
    table["per-file-ignores"] = dict(line.split(":", 1) for line in lines)
    # `entry-points` is one "script: ARGUMENTS" per line.
    entries = [line for line in table.pop("entry-points", "").splitlines() if line.strip()]
    if any(":" not in line for line in entries):
        raise ConfigError(path, "entry-points: each line is `script: ARGUMENTS`", _line_of(text, "entry-points"))
    if entries:
        table["entry-points"] = {k.strip(): v for k, v in (line.split(":", 1) for line in entries)}
    return _settings(table, path, text)


def _from_pyproject(path: Path) -> Settings | None:
    text = _text(path)
    if text is None:
        return None
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib says "... (at line 3, column 7)"; the line goes in front, where editors look.
        match = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        message = str(exc)[: match.start()].strip() if match else str(exc)
        raise ConfigError(path, f"invalid TOML: {message}", int(match.group(1)) if match else None) from None
    except RecursionError:
        raise ConfigError(path, "invalid TOML: nested too deeply to read") from None
    tool = data.get("tool", {})
    table = tool.get("tf1gradfix") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(path, "`tool.tf1gradfix` must be a table", _line_of(text, "tf1gradfix"))
    return None if table is None else _settings(table, path, text)


def load_settings(start: Path | None = None) -> Settings:
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        for reader, name in ((_from_pyproject, "pyproject.toml"), (_from_setup_cfg, "setup.cfg")):
            path = candidate / name
            if path.is_file():
                found = reader(path)
                if found is not None:
                    return found
    return Settings()
