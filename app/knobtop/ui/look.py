"""Themes (TOML files in ``themes/`` and ``~/.config/knobtop/themes/``) and key remapping,
applied to any knobtop app at mount."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.color import Color, ColorParseError
from textual.theme import Theme

from knobtop.bundled import bundled_dir
from knobtop.config import ConfigError, UiConfig, config_dir
from knobtop.tomlcheck import check_keys, read_toml, too_deep

BUNDLED_THEMES = bundled_dir("themes")
DEFAULT_THEME = "knobtop-dark"
NO_COLOR_THEME = "knobtop-mono"
_COLOR_KEYS = ("primary", "secondary", "accent", "warning", "error", "success", "foreground",
               "background", "surface", "panel", "boost")
_KEYS = ("name", "dark", "luminosity_spread", "text_alpha", "variables", *_COLOR_KEYS)


class ThemeError(ConfigError):
    """A theme file that cannot be used (file, key, problem, fix)."""


def theme_dirs() -> list[Path]:
    """Bundled first, then the person's own (which may replace a bundled name)."""
    return [BUNDLED_THEMES, config_dir() / "themes"]


def load_theme(path: Path) -> Theme:
    name = str(path)

    def error(key: str | None, problem: str, fix: str) -> ThemeError:
        return ThemeError(name, key, problem, fix)

    data = read_toml(path, error)
    try:
        return _theme(data, name)
    except RecursionError:
        raise too_deep(error) from None


def _theme(data: dict[str, Any], name: str) -> Theme:
    check_keys(data, _KEYS, "", lambda key, problem, fix: ThemeError(name, key, problem, fix))
    if not isinstance(data.get("name"), str) or not data["name"].strip():
        raise ThemeError(name, "name", "missing", 'add name = "my-theme"')
    if "primary" not in data:
        raise ThemeError(name, "primary", "missing", 'add primary = "#4C9BE8"')
    kwargs: dict[str, Any] = {"name": data["name"].strip()}
    for key in _COLOR_KEYS:
        if key in data:
            value = data[key]
            try:
                Color.parse(value)
            except (ColorParseError, TypeError, ValueError):
                raise ThemeError(name, key, f"{value!r} is not a colour",
                                 'use "#RRGGBB", "rgb(r,g,b)" or a colour name') from None
            kwargs[key] = value
    if "dark" in data:
        if not isinstance(data["dark"], bool):
            raise ThemeError(name, "dark", "must be true or false", "write dark = true")
        kwargs["dark"] = data["dark"]
    for key in ("luminosity_spread", "text_alpha"):
        if key in data:
            if not isinstance(data[key], int | float) or not 0 <= data[key] <= 1:
                raise ThemeError(name, key, "must be a number from 0 to 1", f"{key} = 0.15")
            kwargs[key] = float(data[key])
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(
            isinstance(v, str) for v in variables.values()):
        raise ThemeError(name, "variables", "must be a table of strings",
                         '[variables] then "footer-key-foreground" = "#ffffff"')
    kwargs["variables"] = dict(variables)
    return Theme(**kwargs)


def load_themes(dirs: Iterable[Path] | None = None) -> tuple[list[Theme], list[str]]:
    """Every theme file in ``dirs`` (later ones replace earlier ones of the same name),
    and the problems of the files that were skipped."""
    themes: dict[str, Theme] = {}
    problems: list[str] = []
    for folder in theme_dirs() if dirs is None else dirs:
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
            try:
                theme = load_theme(path)
            except (ThemeError, OSError) as exc:
                problems.append(str(exc))
                continue
            themes[theme.name] = theme
    return list(themes.values()), problems


def apply_look(app: App[Any], config: UiConfig) -> list[str]:
    """Register the themes, pick the configured one (mono under NO_COLOR), remap keys.
    Returns the problems to show (skipped theme files, an unknown theme name)."""
    themes, problems = load_themes()
    for theme in themes:
        app.register_theme(theme)
    wanted = config.theme or (NO_COLOR_THEME if os.environ.get("NO_COLOR") else DEFAULT_THEME)
    if wanted in app.available_themes:
        app.theme = wanted
    else:
        names = ", ".join(sorted(t.name for t in themes))
        problems.append(f"theme '{wanted}' not found; using {DEFAULT_THEME} "
                        f"(knobtop themes: {names})")
        if DEFAULT_THEME in app.available_themes:
            app.theme = DEFAULT_THEME
    if config.keys:  # checked against every binding id by knobtop.ui.keymap at start-up
        app.set_keymap(config.keys)
    return problems
