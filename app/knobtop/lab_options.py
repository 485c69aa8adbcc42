"""A sandbox's base options (``lab --option``, a recipe's ``[targets.NAME] options``): an
allow-list of the lab's own server's variables, and how they and its plugins are kept in
its my.cnf.

A base option is accepted only if its name (``-`` and ``_`` alike) is exactly a variable
the lab's ``mariadbd`` reports (``--verbose --help``, with the sandbox's plugins loaded)
and not a reach variable (:mod:`knobtop.server.policy`): mariadbd's option reader also
takes prefixes (``loose-``, ``skip-`` ...) and unique abbreviations (``--bind-addr``,
``--data``), which a list of forbidden names could never catch.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from knobtop.labdirs import LabError, read_own
from knobtop.safefile import private_cwd
from knobtop.server.policy import Risk, normal, risk_of

# my.cnf: the sandbox's own base options follow this comment line, up to the drop-in dir.
OPTIONS_LINE = "# base options (knobtop lab --option):"
OPTION_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
OPTION_VALUE = re.compile(r"[A-Za-z0-9_.,:/+-]{1,256}")
# What mariadbd's option reader strips from a name before it looks the rest up.
PREFIXES = ("loose_", "skip_", "enable_", "disable_", "maximum_")
# The lab's defaults a base option may replace.
LAB_DEFAULTS = (("innodb_buffer_pool_size", "128M"), ("innodb_log_file_size", "96M"),
                ("max_connections", "300"))
# Server plugins the sandbox can load, and the Debian package that ships each.
PLUGIN_PACKAGES = {"ha_rocksdb": "mariadb-plugin-rocksdb"}
# The line of ``--verbose --help`` above the variables and their values.
VARIABLES_HEADER = "Variables (--variable-name=value)"
NOT_REACH_FIX = ("the lab sets its own listener, paths, plugins and logins; give a "
                 "performance variable, or use a profile for a server of your own")

Options = tuple[tuple[str, str], ...]


def option_reach(key: str) -> Risk | None:
    """The reach risk of option ``key``, or of the variable it names behind mariadbd's
    prefixes (``loose-skip-grant-tables`` is ``skip_grant_tables``); None if neither."""
    name, found = normal(key), None
    while True:
        risk = risk_of(name)
        found = risk if risk.reach else found
        prefix = next((p for p in PREFIXES if name.startswith(p)), None)
        if prefix is None:
            return found
        name = name.removeprefix(prefix)


def _reach_said(key: str, risk: Risk) -> str:
    read = "" if risk.name == normal(key) else f"mariadbd reads it as {risk.name}, and "
    return (f"{read}{risk.name} {risk.what}, so a sandbox's base option may not set it; "
            + NOT_REACH_FIX)


def check_option(key: str, value: str) -> None:
    """A base option as mariadbd's option-file reader takes it: a plain name and a plain
    value on one line (no spaces, quotes, '#' or line breaks), not a reach variable. The
    name is checked against the server's own list when the sandbox starts (check_known)."""
    if not OPTION_NAME.fullmatch(key):
        raise LabError(f"--option {key}={value}: {key!r} is not a server option name "
                       "(lower case letters, digits, _ and -), e.g. "
                       "innodb_flush_log_at_trx_commit")
    if not OPTION_VALUE.fullmatch(value):
        raise LabError(f"--option {key}={value}: give a plain value (letters, digits and "
                       "_ . , : / + -), e.g. 2 or O_DIRECT")
    risk = option_reach(key)
    if risk is not None:
        raise LabError(f"--option {key}: {_reach_said(key, risk)}")


def parse_option(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` from the command line, checked."""
    key, sep, value = text.partition("=")
    if not sep:
        raise LabError(f"--option {text}: write KEY=VALUE, e.g. "
                       "innodb_flush_log_at_trx_commit=2")
    key, value = key.strip(), value.strip()
    check_option(key, value)
    return key, value


@dataclass(frozen=True, slots=True)
class ServerHelp:
    """What ``mariadbd --verbose --help`` says of itself: its variables (normal names) and
    its compiled-in plugin directory."""

    variables: frozenset[str]
    plugin_dir: Path | None


_HELP: dict[tuple[str, int, int, tuple[str, ...]], ServerHelp] = {}


def server_help(server: str, plugins: tuple[str, ...] = ()) -> ServerHelp:
    """``server --no-defaults [--plugin-load-add=P.so ...] --verbose --help``, read once per
    binary (path, size, modification time) and plugins for this process (~70 ms)."""
    try:
        st = os.stat(server)
    except OSError as exc:
        raise LabError(f"cannot read the server program {server}: {exc.strerror}") from None
    key = (server, st.st_size, st.st_mtime_ns, plugins)
    if key not in _HELP:
        loads = [f"--plugin-load-add={name}.so" for name in plugins]
        try:
            proc = subprocess.run([server, "--no-defaults", *loads, "--verbose", "--help"],
                                  capture_output=True, text=True, timeout=30, check=False,
                                  cwd=private_cwd())
        except subprocess.TimeoutExpired:
            raise LabError(f"{server} --verbose --help did not answer within 30 s") from None
        _HELP[key] = _read_help(proc.stdout)
        if not _HELP[key].variables:
            del _HELP[key]
            raise LabError(f"{server} --verbose --help lists no variables (no line "
                           f"{VARIABLES_HEADER!r}):\n{proc.stderr[-400:]}")
    return _HELP[key]


def _read_help(text: str) -> ServerHelp:
    lines = text.splitlines()
    names: set[str] = set()
    plugin_dir = None
    if VARIABLES_HEADER in lines:
        start = lines.index(VARIABLES_HEADER) + 3  # the header's two lines: title, dashes
        for line in lines[start:]:
            if not line.strip():
                break
            name, _, value = line.partition(" ")
            names.add(normal(name))
            if name == "plugin-dir" and value.strip():
                plugin_dir = Path(value.strip())
    return ServerHelp(frozenset(names), plugin_dir)


def server_plugin_dir(server: str) -> Path:
    """The plugin directory compiled into ``server`` (``--verbose --help`` prints it)."""
    found = server_help(server).plugin_dir
    if found is None:
        raise LabError(f"{server} --verbose --help names no plugin-dir")
    return found


def unknown(key: str, variables: frozenset[str], server: str) -> str | None:
    """Why option ``key`` is not one a sandbox may set (None when it may): not exactly a
    variable ``server`` reports, or a reach variable; with the fix."""
    name = normal(key)
    risk = risk_of(name)
    if name in variables:
        return _reach_said(key, risk) if risk.reach else None
    allowed = sorted(v for v in variables if not risk_of(v).reach)
    prefix = next((p for p in PREFIXES if name.startswith(p)), None)
    if prefix is not None:
        rest = name.removeprefix(prefix)
        said = (f"{prefix[:-1]}- is a prefix mariadbd's option reader takes, not part of a "
                "variable's name: a sandbox's base option is a server variable's exact name")
        reach = option_reach(rest)
        if reach is not None:
            return f"{said}; {_reach_said(rest, reach)}"
        if rest in allowed:
            return f"{said}; write {rest}"
        return said + _close(rest, allowed)
    said = (f"{server} has no variable named {name} (a base option is a variable's exact "
            "name, never an abbreviation of one)")
    longer = [v for v in variables if v.startswith(name)]
    if len(longer) == 1:  # what mariadbd's reader would take it for
        whole = risk_of(longer[0])
        if whole.reach:
            return f"{said}; mariadbd would read it as {whole.name}, which {whole.what}: " \
                f"a sandbox's base option may not set it; {NOT_REACH_FIX}"
        return f"{said}; write {whole.name}"
    return said + (_close(name, allowed) or f"; `{server} --verbose --help` lists them")


def _close(name: str, allowed: list[str]) -> str:
    import difflib  # only for a refusal: not on every start's import

    match = difflib.get_close_matches(name, allowed, n=1, cutoff=0.8)
    return f"; did you mean {match[0]}?" if match else ""


def check_known(options: Options, server: str, plugins: tuple[str, ...], where: str) -> None:
    """Each of ``options`` is exactly a variable ``server`` reports with ``plugins`` loaded,
    and not a reach variable; LabError naming the first that is not, ``where`` it came from,
    why, and the fix. Runs the server's ``--help`` only when there is an option to check."""
    if not options:
        return
    variables = server_help(server, plugins).variables
    for key, value in options:
        problem = unknown(key, variables, server)
        if problem is not None:
            raise LabError(f"{where} {key}={value}: {problem}")


def options_text(options: Options) -> str:
    return ", ".join(f"{k}={v}" for k, v in options)


def configured_options(config: Path) -> Options:
    """The base options a sandbox my.cnf sets (the lines after OPTIONS_LINE)."""
    lines = (read_own(config) or "").splitlines()
    if OPTIONS_LINE not in lines:
        return ()
    out = []
    for line in lines[lines.index(OPTIONS_LINE) + 1:]:
        key, sep, value = line.partition("=")
        if not sep or not OPTION_NAME.fullmatch(key):
            break
        out.append((key, value))
    return tuple(out)


def my_cnf(options: Options, plugins: tuple[str, ...], dropin_dir: Path) -> str:
    """A sandbox's my.cnf: the lab's defaults (but those ``options`` replace), its plugins,
    its base options after OPTIONS_LINE, and its drop-in dir."""
    mine = {normal(key) for key, _ in options}
    return (
        "# Written by knobtop lab; knob changes go to conf.d/, not here. The lab's own\n"
        "# settings (listener, port, socket, paths, plugin dir, logins) are on mariadbd's\n"
        "# command line, which comes after this file and conf.d/: neither can move them.\n"
        "[mysqld]\n"
        + "".join(f"{key}={value}\n" for key, value in LAB_DEFAULTS if key not in mine)
        + "".join(f"plugin-load-add={name}.so\n" for name in plugins)
        + (f"{OPTIONS_LINE}\n" if options else "")
        + "".join(f"{key}={value}\n" for key, value in options)
        + f"!includedir {dropin_dir}\n"
    )


def configured_plugins(config: Path) -> tuple[str, ...]:
    """The plugin libraries a sandbox my.cnf loads (its ``plugin-load-add=`` lines)."""
    return tuple(
        line.split("=", 1)[1].strip().removesuffix(".so")
        for line in (read_own(config) or "").splitlines()
        if line.startswith("plugin-load-add=")
    )


def check_plugin_files(server: str, plugins: tuple[str, ...]) -> None:
    """Each plugin's library is in the server's plugin dir (mariadbd only logs a
    missing one and starts without it)."""
    if not plugins:
        return
    plugin_dir = server_plugin_dir(server)
    for name in plugins:
        if not (plugin_dir / f"{name}.so").exists():
            raise LabError(missing_plugin(name, plugin_dir))


def missing_plugin(name: str, plugin_dir: Path) -> str:
    """What to do when a plugin's library is not in the server's plugin dir."""
    package = PLUGIN_PACKAGES.get(name)
    fix = (
        f"install {package}: `sudo apt-get install -y {package}`"
        if package
        else "install the package that ships it for this server version"
    )
    return f"the server plugin {name}.so is not in {plugin_dir}; {fix}, then start again"
