"""Settings from `[tf1gradfix]` in setup.cfg or `[tool.tf1gradfix]` in pyproject.toml.

The nearest file above the current folder that has the section wins;
command-line flags win over both.
"""

from __future__ import annotations

import configparser
import fnmatch
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Settings:
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source: str | None = None  # which file the settings came from

    def ignores_for(self, path: str) -> tuple[str, ...]:
        posix = Path(path).as_posix()
        extra: list[str] = []
        for pattern, codes in self.per_file_ignores.items():
            if fnmatch.fnmatchcase(posix, pattern) or fnmatch.fnmatchcase(Path(path).name, pattern):
                extra.extend(codes)
        return tuple(extra)


def _codes(value) -> tuple[str, ...]:
    """Code prefixes are case-insensitive, as on the command line."""
    return tuple(code.upper() for code in _split(value))


def _split(value) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)):
        items = value
    else:
        items = str(value).replace("\n", ",").split(",")
    return tuple(item.strip() for item in items if str(item).strip())


def _settings(table, source: Path) -> Settings:
    """One reader for both files: `table` maps option names to values."""
    settings = Settings(source=str(source))
    if "select" in table:
        settings.select = _codes(table["select"])
    if "ignore" in table:
        settings.ignore = _codes(table["ignore"])
    if "exclude" in table:
        settings.exclude = _split(table["exclude"])
    for pattern, codes in table.get("per-file-ignores", {}).items():
        settings.per_file_ignores[pattern.strip()] = _codes(codes)
    return settings


def _from_setup_cfg(path: Path) -> Settings | None:
    parser = configparser.ConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error:
        return None
    if not parser.has_section("tf1gradfix"):
        return None
    table = dict(parser["tf1gradfix"])
    # `per-file-ignores` is one "glob: CODES" per line in an INI file.
    lines = table.pop("per-file-ignores", "").splitlines()
    table["per-file-ignores"] = dict(line.split(":", 1) for line in lines if ":" in line)
    return _settings(table, path)


def _from_pyproject(path: Path) -> Settings | None:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if "tf1gradfix" not in text:  # no table of ours: skip importing and running the TOML parser
        return None
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    table = data.get("tool", {}).get("tf1gradfix")
    return None if table is None else _settings(table, path)


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
