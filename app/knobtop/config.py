"""The person's settings: ``~/.config/knobtop/config.toml`` (theme, key remapping).

Layout::

    theme = "knobtop-light"          # a bundled theme or one in ~/.config/knobtop/themes/
    [keys]                           # binding id = key(s), comma-separated for several
    "load.toggle" = "L"
    "journal.note" = "n,ctrl+n"

``KNOBTOP_CONFIG`` names another file.  A missing file is fine (defaults); a broken one
raises ``ConfigError`` naming the file, the key and the fix.  Which binding ids exist is
checked by the screen that applies the keys (``knobtop.ui.look``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knobtop.tomlcheck import FileError, read_toml, too_deep

__all__ = ["ConfigError", "UiConfig", "config_dir", "config_path", "load_config"]

class ConfigError(FileError):
    """The config file cannot be used; ``file``, ``key``, ``problem`` and ``fix`` say why."""


@dataclass(frozen=True)
class UiConfig:
    theme: str = ""  # "" = knobtop-dark (knobtop-mono when NO_COLOR is set)
    keys: dict[str, str] = field(default_factory=dict)  # binding id -> keys
    path: Path | None = None  # where it was read from (for messages)


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "knobtop"


def config_path() -> Path:
    given = os.environ.get("KNOBTOP_CONFIG")
    return Path(given).expanduser() if given else config_dir() / "config.toml"


def load_config(path: Path | None = None) -> UiConfig:
    path = path or config_path()
    name = str(path)

    def error(key: str | None, problem: str, fix: str) -> ConfigError:
        return ConfigError(name, key, problem, fix)

    try:
        data = read_toml(path, error)
    except FileNotFoundError:
        if os.environ.get("KNOBTOP_CONFIG") and path == config_path():
            raise ConfigError(name, None, "the file does not exist",
                              "create it, or unset KNOBTOP_CONFIG") from None
        return UiConfig()
    try:
        return _settings(data, path, name)
    except RecursionError:
        raise too_deep(error) from None


def _settings(data: dict[str, Any], path: Path, name: str) -> UiConfig:
    for key in data:
        if key not in ("theme", "keys"):
            raise ConfigError(name, key, "unknown setting",
                              "the settings are: theme, [keys]")
    theme = data.get("theme", "")
    if not isinstance(theme, str):
        raise ConfigError(name, "theme", "must be a string",
                          'write theme = "knobtop-light" (a theme name)')
    keys = data.get("keys", {})
    if not isinstance(keys, dict):
        raise ConfigError(name, "keys", "must be a table",
                          'write [keys] and lines like "load.toggle" = "L"')
    for binding, value in keys.items():
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(name, f"keys.{binding}", "must be a non-empty string of keys",
                              f'write "{binding}" = "x" (several: "x,ctrl+x")')
    return UiConfig(theme=theme, keys={k: v.replace(" ", "") for k, v in keys.items()},
                    path=path)
