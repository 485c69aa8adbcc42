"""NDB Cluster: config.ini edits, ndb_mgm output, rolling restarts, disk page buffer hit ratio."""
# Over 500 lines: NDB's config.ini grammar, ndb_mgm's output and the rolling restart are
# one protocol with one set of failure rules; apart, each would need the others' internals.

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Protocol

from knobtop.errors import KnobtopError
from knobtop.hosts.base import CommandResult, Host, HostError
from knobtop.server.knobs import KnobError

PARAMETER = "DiskPageBufferMemory"

# Replaced by the config.ini path in ``mgmd_argv``.
CONFIG_TOKEN = "{config}"

# The management server caches its configuration and only re-reads config.ini when it is
# started with --reload (or --initial): "Caching of configuration data", manual section
# "NDB Cluster Configuration Files",
# https://dev.mysql.com/doc/refman/8.0/en/mysql-cluster-config-file.html . A running
# ndb_mgmd cannot reload in place; the manual's procedure stops it with the management
# client ("10 STOP") and starts it again from the shell as "ndb_mgmd -f config.ini --reload"
# (https://dev.mysql.com/doc/refman/8.0/en/mysql-cluster-online-add-node-example.html,
# step 2). NdbRollingRestart does exactly that unless ``stop_mgmd=False`` (for a reload
# command that restarts the daemon itself, e.g. a service whose unit passes --reload).
DEFAULT_MGMD_ARGV: tuple[str, ...] = ("ndb_mgmd", "-f", CONFIG_TOKEN, "--reload")

# Node states as ndb_mgm prints them, from status_string() in
# storage/ndb/src/mgmclient/CommandInterpreter.cpp (mysql/mysql-server @005c7e5421,
# https://github.com/mysql/mysql-server/blob/005c7e54214546584c8dc67a746e215f8dbe4b58/
# storage/ndb/src/mgmclient/CommandInterpreter.cpp; unchanged in the 8.x/9.x copy read at
# villagesql/villagesql-server @40032fe9d2): NO_CONTACT "not connected", NOT_STARTED
# "not started", STARTING "starting", STARTED "started", SHUTTING_DOWN "shutting down",
# RESTARTING "restarting", SINGLEUSER "single user mode", anything else "unknown state".
NODE_STATES: tuple[str, ...] = (
    "started",
    "starting",
    "not connected",
    "not started",
    "shutting down",
    "restarting",
    "single user mode",
    "unknown",
)

_SOURCE_PREFIX = "# From:"


def _lines(text: str) -> list[str]:
    """Output lines, without the '# From: <source>' lines that label recorded texts."""
    return [line for line in text.splitlines() if not line.startswith(_SOURCE_PREFIX)]


# ---------------------------------------------------------------------------------------
# config.ini
# ---------------------------------------------------------------------------------------

# The parser's rules, from storage/ndb/src/mgmsrv/InitConfigFileParser.cpp (mysql/mysql-server
# @005c7e5421): a line whose first non-blank character is '#' is a comment; a default section
# header is sscanf("[%120[A-Z_a-z] %120[A-Z_a-z]]") with the second word matched
# case-insensitively against "DEFAULT"; a name-value pair is split at the first '=' or ':',
# everything after '#' in the value is dropped, both sides are trimmed; names are looked up in
# case-insensitive Properties; a name given twice in one section is an error ("Parameter %s
# specified twice"); a [X DEFAULT] section only applies to [X] sections that come after it.
# Section aliases (ConfigInfo.cpp m_sectionNameAliases): NDBD = DB, NDB_MGMD = MGM,
# MYSQLD = API. ';' comments are also left alone here.
_HEADER = re.compile(r"^[ \t]*\[[ \t]*([A-Za-z_]+)(?:[ \t]+([A-Za-z_]+))?[ \t]*\][ \t]*$")
_ASSIGNMENT = re.compile(
    r"^(?P<head>[ \t]*(?P<name>[^\s=:#;\[][^=:]*?)[ \t]*[=:][ \t]*)"
    r"(?P<value>[^#]*?)(?P<tail>[ \t]*(?:#.*)?)$"
)
_SECTION_ALIASES = {"NDBD": "DB", "NDB_MGMD": "MGM", "MYSQLD": "API"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _section(line: str) -> tuple[str, bool] | None:
    """(canonical section name, is a DEFAULT section) for a header line, else None."""
    m = _HEADER.match(line)
    if m is None:
        return None
    first = m.group(1).upper()
    second = (m.group(2) or "").upper()
    if second and second != "DEFAULT":
        return f"{first} {second}", False
    return _SECTION_ALIASES.get(first, first), second == "DEFAULT"


def get_ndbd_default(config_ini: str, name: str) -> str | None:
    """The value of ``name`` in the ``[ndbd default]`` section (same matching rules as
    ``set_ndbd_default``), or None when it is not set there."""
    in_target = False
    for raw in config_ini.splitlines():
        section = _section(raw)
        if section is not None:
            in_target = section == ("DB", True)
            continue
        m = _ASSIGNMENT.match(raw) if in_target else None
        if m is not None and m.group("name").strip().lower() == name.lower():
            return m.group("value").strip()
    return None


def set_ndbd_default(config_ini: str, name: str, value: str) -> str:
    """Return ``config_ini`` with ``name=value`` in its ``[ndbd default]`` section.

    Matching follows NDB's parser: section and parameter names are case-insensitive,
    ``[DB DEFAULT]`` is the same section, ``=`` and ``:`` both separate. An existing line
    keeps its spelling, separator, spacing and trailing ``# comment``; only the value
    changes (later duplicates in the section, which NDB would reject, are removed).
    A missing key goes after the section's last parameter. A missing section is added
    before the first section header (defaults only apply to sections after them).
    Comments and every other line are left untouched.
    """
    if not _NAME.match(name):
        raise KnobError(f"{name!r} is not an NDB parameter name")
    value = value.strip()
    if not value or any(ch in value for ch in "\r\n#"):
        raise KnobError(f"{value!r} is not a usable config.ini value (empty, newline or '#')")
    newline = "\r\n" if "\r\n" in config_ini else "\n"
    lines = config_ini.splitlines(keepends=True)
    in_target = False
    first_header: int | None = None
    insert_after: int | None = None  # last parameter (or header) of the first target section
    targets = 0
    hits: list[int] = []
    for i, raw in enumerate(lines):
        body = raw.rstrip("\r\n")
        section = _section(body)
        if section is not None:
            if first_header is None:
                first_header = i
            in_target = section == ("DB", True)
            if in_target:
                targets += 1
                if targets == 1:
                    insert_after = i
            continue
        if not in_target:
            continue
        m = _ASSIGNMENT.match(body)
        if m is None:
            continue
        if targets == 1:
            insert_after = i
        if m.group("name").strip().lower() == name.lower():
            hits.append(i)

    if hits:
        first = hits[0]
        raw = lines[first]
        body = raw.rstrip("\r\n")
        ending = raw[len(body) :]
        m = _ASSIGNMENT.match(body)
        assert m is not None
        lines[first] = f"{m.group('head')}{value}{m.group('tail')}{ending}"
        for extra in reversed(hits[1:]):
            del lines[extra]
        return "".join(lines)

    new_line = f"{name}={value}{newline}"
    if insert_after is not None:
        if not lines[insert_after].endswith(("\n", "\r")):
            lines[insert_after] += newline
        lines.insert(insert_after + 1, new_line)
        return "".join(lines)

    block = [f"[ndbd default]{newline}", new_line]
    if first_header is not None:
        lines[first_header:first_header] = [*block, newline]
        return "".join(lines)
    text = "".join(lines)
    if text and not text.endswith(("\n", "\r")):
        text += newline
    if text.strip():
        text += newline
    return text + "".join(block)


# ---------------------------------------------------------------------------------------
# ndb_mgm output
# ---------------------------------------------------------------------------------------

# SHOW prints one block per node type: "[%s(%s)]\t%d node(s)" then "id=%d" lines, then a
# blank line (print_nodes() in CommandInterpreter.cpp, villagesql/villagesql-server
# @40032fe9d217aed8c71b9da75f33bb0c89a1581f, a mysql-server 8.x/9.x fork). A connected
# node's line is "id=N\t@host  (<version>[, <status_string>][, Nodegroup: G | , no nodegroup]
# [, *])" (status only when not "started"); an unconnected one is
# "id=N (not connected, accepting connect from <host>)". The manual's examples print
# spaces where the program prints tabs; both parse.
_BLOCK = re.compile(r"^\[(?P<proc>[A-Za-z_]+)\((?P<type>[A-Z]+)\)\]")
_ID_LINE = re.compile(r"^id=(?P<id>\d+)(?P<rest>.*)$")


def parse_show_nodes(show_output: str, node_type: str = "NDB") -> dict[int, str]:
    """Node id -> state for one block of ``ndb_mgm -e SHOW`` (``NDB``, ``MGM`` or ``API``).

    Data nodes get one of ``NODE_STATES``; other connected nodes read ``connected``.
    """
    nodes: dict[int, str] = {}
    current: str | None = None
    for line in _lines(show_output):
        stripped = line.strip()
        block = _BLOCK.match(stripped)
        if block is not None:
            current = block.group("type")
            continue
        if not stripped:
            current = None
            continue
        if current != node_type:
            continue
        m = _ID_LINE.match(stripped)
        if m is None:
            continue
        rest = m.group("rest")
        if "(not connected" in rest:
            nodes[int(m.group("id"))] = "not connected"
            continue
        state = "started" if node_type == "NDB" else "connected"
        inner = rest[rest.find("(") + 1 : rest.rfind(")")] if "(" in rest else ""
        for part in inner.split(",")[1:]:
            word = part.strip()
            if word == "unknown state":
                state = "unknown"
            elif word in NODE_STATES:
                state = word
        nodes[int(m.group("id"))] = state
    return nodes


def parse_node_ids(show_output: str) -> list[int]:
    """Data node ids (the ``[ndbd(NDB)]`` block) of ``ndb_mgm -e SHOW``, in order.

    The block header's count is not trusted: the manual's add-node example shows
    "[ndbd(NDB)] 2 node(s)" above four id= lines.
    """
    return list(parse_show_nodes(show_output, "NDB"))


# "<id> STATUS" prints "Node %d: %s" with status_string(), then " (Last completed phase N)"
# while starting or shutting down, then " (<version>)" unless not connected (print_status()
# in CommandInterpreter.cpp, villagesql/villagesql-server @40032fe9d2; the 5.1-era copy in
# mysql/mysql-server @005c7e5421 prints " (Phase N)" and " (Version x.y.z)" instead).
# Capitalised "Node 1: Started (version ...)" lines are event reports (printLogEvent()),
# which only the interactive client prints; they are not status lines and are ignored.
_STATUS_LINE = re.compile(
    r"^Node (?P<id>\d+): (?P<state>not connected|not started|starting|started|shutting down"
    r"|restarting|single user mode|unknown state)(?: \(.*)?$"
)
# ndb_waiter prints "Node %d: %s" with ndb_mgm_get_node_status_string() (upper case) in
# storage/ndb/tools/waiter.cpp (mysql/mysql-server @a357ed7cce); the manual's sample output
# (https://dev.mysql.com/doc/refman/8.0/en/mysql-cluster-programs-ndb-waiter.html) shows an
# older "State node %d %s" form. Both are read.
_WAITER_LINE = re.compile(
    r"^(?:Node (?P<id>\d+):|State node (?P<id2>\d+)) (?P<state>NO_CONTACT|UNKNOWN|NOT_STARTED"
    r"|STARTING|STARTED|SHUTTING_DOWN|RESTARTING|SINGLEUSER|SINGLE USER MODE)\s*$"
)
_WAITER_STATES = {
    "NO_CONTACT": "not connected",
    "UNKNOWN": "unknown",
    "NOT_STARTED": "not started",
    "STARTING": "starting",
    "STARTED": "started",
    "SHUTTING_DOWN": "shutting down",
    "RESTARTING": "restarting",
    "SINGLEUSER": "single user mode",
    "SINGLE USER MODE": "single user mode",
}


def parse_node_status(text: str, node: int) -> str:
    """The last reported state of data node ``node`` in ``ndb_mgm -e "N STATUS"`` (or
    ``ALL STATUS``, or ndb_waiter) output: one of ``NODE_STATES``, ``unknown`` if absent."""
    state = "unknown"
    for line in _lines(text):
        stripped = line.strip()
        m = _STATUS_LINE.match(stripped)
        if m is not None:
            if int(m.group("id")) == node:
                word = m.group("state")
                state = "unknown" if word == "unknown state" else word
            continue
        w = _WAITER_LINE.match(stripped)
        if w is not None and int(w.group("id") or w.group("id2")) == node:
            state = _WAITER_STATES[w.group("state")]
    return state


# ---------------------------------------------------------------------------------------
# Rolling restart
# ---------------------------------------------------------------------------------------

OnStep = Callable[[str, int | None, str, float], None]


class NdbError(KnobtopError, RuntimeError):
    """A rolling-restart step failed; ``step``, ``node`` and ``output`` say where and why."""

    def __init__(self, message: str, *, step: str, node: int | None, output: str) -> None:
        super().__init__(message)
        self.step = step
        self.node = node
        self.output = output


def _describe(step: str, node: int | None, detail: str, output: str) -> str:
    where = f"step '{step}'" + (f" for data node {node}" if node is not None else "")
    tail = output.strip()
    if len(tail) > 2000:
        tail = "..." + tail[-2000:]
    return f"NDB rolling restart failed at {where}: {detail}" + (
        f"\n--- output ---\n{tail}" if tail else ""
    )


@dataclass
class _Plan:
    mgm_node: int | None = None
    restarted: list[int] = field(default_factory=list)


class NdbRollingRestart:
    """Set a ``[ndbd default]`` parameter and restart every data node, one at a time.

    ``run(value)``: check with ``SHOW`` that every data node is started; read config.ini;
    write it with ``parameter=value`` (``write_file_atomic`` keeps the old one as NAME.prev);
    reload the management server (``<mgm id> STOP``, wait until it stops answering, start
    ``mgmd_argv``, wait until ``SHOW`` answers again and lists every data node started);
    take the data node ids from that ``SHOW``; then per node ``ndb_mgm -e "N RESTART"`` and
    poll ``"N STATUS"`` every ``poll_interval`` s until ``started`` (at most
    ``node_timeout`` s), before the next node.

    ``N RESTART`` returns after the node has shut down (the manual's transcript shows
    "Node shutdown completed" before "Node N is being restarted"), so the first poll sees
    the node down and "started" means it came back.

    Any failure (a non-zero exit, a timeout, a host error) stops the sequence, writes the
    config.ini read at the start back (the bytes NAME.prev held), reloads the management
    server again and raises ``NdbError`` naming the node, the step and the output; nodes
    already restarted keep the new value until restarted again, and the error says which.
    ``on_step(step, node, status, seconds)`` reports every step and every state change of a
    node (seconds since its RESTART, or since ``run`` began for cluster-wide steps).
    """

    def __init__(
        self,
        host: Host,
        config_path: PurePath | str,
        *,
        connect_string: str = "localhost:1186",
        mgmd_argv: Sequence[str] = DEFAULT_MGMD_ARGV,
        stop_mgmd: bool = True,
        mgm_node_id: int | None = None,
        mgm_argv: Sequence[str] = ("ndb_mgm",),
        parameter: str = PARAMETER,
        poll_interval: float = 2.0,
        node_timeout: float = 900.0,
        mgmd_timeout: float = 120.0,
        command_limit: float = 60.0,
        file_mode: int = 0o644,
        on_step: OnStep | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.host = host
        self.config_path = PurePath(config_path)
        self.connect_string = connect_string
        self.mgmd_argv = tuple(mgmd_argv)
        self.stop_mgmd = stop_mgmd
        self.mgm_node_id = mgm_node_id
        self.mgm_argv = tuple(mgm_argv)
        self.parameter = parameter
        self.poll_interval = poll_interval
        self.node_timeout = node_timeout
        self.mgmd_timeout = mgmd_timeout
        self.command_limit = command_limit
        self.file_mode = file_mode
        self.on_step = on_step
        self._clock = clock
        self._sleep = sleep
        self._t0 = 0.0

    # -- commands ------------------------------------------------------------------------

    def mgm_command(self, command: str) -> list[str]:
        """The argv that runs one management client command."""
        return [*self.mgm_argv, "-c", self.connect_string, "-e", command]

    def mgmd_command(self) -> list[str]:
        return [arg.replace(CONFIG_TOKEN, str(self.config_path)) for arg in self.mgmd_argv]

    def _report(self, step: str, node: int | None, status: str, seconds: float) -> None:
        if self.on_step is not None:
            self.on_step(step, node, status, seconds)

    async def _run(self, argv: Sequence[str], step: str, node: int | None) -> CommandResult:
        try:
            return await self.host.run(argv, limit=self.command_limit)
        except HostError as exc:
            raise NdbError(
                _describe(step, node, f"'{' '.join(argv)}' could not run: {exc}", ""),
                step=step,
                node=node,
                output="",
            ) from None

    async def _checked(self, argv: Sequence[str], step: str, node: int | None) -> CommandResult:
        res = await self._run(argv, step, node)
        output = (res.stdout + res.stderr).strip()
        if res.returncode != 0 or "Restart failed." in res.stdout:
            raise NdbError(
                _describe(step, node, f"'{' '.join(argv)}' exited {res.returncode}", output),
                step=step,
                node=node,
                output=output,
            )
        return res

    async def _wait_mgmd(self, *, up: bool, all_started: bool = False) -> str:
        """Poll SHOW until the management server answers (``up``; with ``all_started``, also
        until it lists every data node started again) or until it stops answering."""
        step = "wait-mgmd-up" if up else "wait-mgmd-down"
        start = self._clock()
        while True:
            res = await self._run(self.mgm_command("SHOW"), step, None)
            answering = res.returncode == 0 and "Cluster Configuration" in res.stdout
            if answering and up and all_started:
                states = parse_show_nodes(res.stdout, "NDB")
                answering = bool(states) and all(s == "started" for s in states.values())
            if answering == up:
                self._report(step, None, "answering" if up else "stopped", self._elapsed())
                return res.stdout
            if self._clock() - start >= self.mgmd_timeout:
                detail = (
                    f"ndb_mgmd {'did not answer' if up else 'still answered'} after "
                    f"{self.mgmd_timeout:g} s"
                )
                if up and all_started and res.returncode == 0:
                    detail = (
                        f"the data nodes were not all started under the reloaded ndb_mgmd "
                        f"after {self.mgmd_timeout:g} s"
                    )
                output = (res.stdout + res.stderr).strip()
                raise NdbError(
                    _describe(step, None, detail, output), step=step, node=None, output=output
                )
            await self._sleep(self.poll_interval)

    async def _reload_mgmd(self, plan: _Plan, *, probe: bool = False) -> list[int]:
        """Restart the management server so it re-reads config.ini; the data node ids."""
        if self.stop_mgmd:
            running = True
            if probe:
                res = await self._run(self.mgm_command("SHOW"), "stop-mgmd", None)
                running = res.returncode == 0
            if running:
                if plan.mgm_node is None:
                    raise NdbError(
                        _describe("stop-mgmd", None, "management node id unknown", ""),
                        step="stop-mgmd",
                        node=None,
                        output="",
                    )
                await self._checked(self.mgm_command(f"{plan.mgm_node} STOP"), "stop-mgmd", None)
                self._report("stop-mgmd", plan.mgm_node, "stopped", self._elapsed())
                await self._wait_mgmd(up=False)
        await self._checked(self.mgmd_command(), "start-mgmd", None)
        self._report("start-mgmd", None, "started", self._elapsed())
        # Data nodes reconnect to the new ndb_mgmd by themselves; wait for them (not during a
        # rollback, where a node may be down because of the failure being rolled back).
        show = await self._wait_mgmd(up=True, all_started=not probe)
        return parse_node_ids(show)

    def _elapsed(self) -> float:
        return self._clock() - self._t0

    # -- the sequence --------------------------------------------------------------------

    async def _preflight(self, plan: _Plan) -> None:
        res = await self._checked(self.mgm_command("SHOW"), "preflight", None)
        data = parse_show_nodes(res.stdout, "NDB")
        if not data:
            raise NdbError(
                _describe("preflight", None, "SHOW lists no data nodes", res.stdout),
                step="preflight",
                node=None,
                output=res.stdout,
            )
        down = {node: state for node, state in data.items() if state != "started"}
        if down:
            listed = ", ".join(f"{n} {s}" for n, s in down.items())
            raise NdbError(
                _describe(
                    "preflight",
                    next(iter(down)),
                    f"not every data node is started ({listed}); a rolling restart now "
                    "could take a whole node group down",
                    res.stdout,
                ),
                step="preflight",
                node=next(iter(down)),
                output=res.stdout,
            )
        if self.stop_mgmd:
            if self.mgm_node_id is not None:
                plan.mgm_node = self.mgm_node_id
            else:
                mgm_nodes = parse_show_nodes(res.stdout, "MGM")
                mgm = [n for n, state in mgm_nodes.items() if state != "not connected"]
                if len(mgm) != 1:
                    raise NdbError(
                        _describe(
                            "preflight",
                            None,
                            f"expected one connected management node, SHOW lists {mgm}; "
                            "pass mgm_node_id (and restart any other ndb_mgmd with --reload "
                            "yourself)",
                            res.stdout,
                        ),
                        step="preflight",
                        node=None,
                        output=res.stdout,
                    )
                plan.mgm_node = mgm[0]
        self._report("preflight", None, f"data nodes {sorted(data)} started", self._elapsed())

    async def _restart_node(self, node: int) -> None:
        start = self._clock()
        await self._checked(self.mgm_command(f"{node} RESTART"), "restart", node)
        self._report("restart", node, "restart issued", self._clock() - start)
        last: str | None = None
        while True:
            res = await self._checked(self.mgm_command(f"{node} STATUS"), "status", node)
            state = parse_node_status(res.stdout, node)
            elapsed = self._clock() - start
            if state != last:
                self._report("status", node, state, elapsed)
                last = state
            if state == "started":
                return
            if elapsed >= self.node_timeout:
                output = (res.stdout + res.stderr).strip()
                raise NdbError(
                    _describe(
                        "wait-started",
                        node,
                        f"not started after {self.node_timeout:g} s (last state: {state})",
                        output,
                    ),
                    step="wait-started",
                    node=node,
                    output=output,
                )
            await self._sleep(self.poll_interval)

    async def run(self, value: str) -> list[int]:
        """Apply ``parameter=value`` with a rolling restart; the data nodes restarted."""
        self._t0 = self._clock()
        plan = _Plan()
        await self._preflight(plan)
        try:
            original = await self.host.read_file(self.config_path)
        except (HostError, OSError) as exc:
            raise NdbError(
                _describe("read-config", None, f"cannot read {self.config_path}: {exc}", ""),
                step="read-config",
                node=None,
                output="",
            ) from None
        updated = set_ndbd_default(
            original.decode("utf-8", errors="surrogateescape"), self.parameter, value
        ).encode("utf-8", errors="surrogateescape")
        try:
            await self.host.write_file_atomic(self.config_path, updated, self.file_mode)
        except (HostError, OSError) as exc:
            # write_file_atomic renames into place, so config.ini is still the old one.
            raise NdbError(
                _describe("write-config", None, f"cannot write {self.config_path}: {exc}", ""),
                step="write-config",
                node=None,
                output="",
            ) from None
        self._report("write-config", None, f"{self.parameter}={value}", self._elapsed())
        try:
            nodes = await self._reload_mgmd(plan)
            for node in nodes:
                await self._restart_node(node)
                plan.restarted.append(node)
        except NdbError as exc:
            raise await self._rollback(plan, original, value, exc) from exc
        except asyncio.CancelledError:
            cancelled = NdbError(
                _describe("cancelled", None, "the rolling restart was cancelled", ""),
                step="cancelled",
                node=None,
                output="",
            )
            error = await self._rollback(plan, original, value, cancelled)
            self._report("rollback", None, str(error), self._elapsed())
            raise
        self._report("done", None, f"{len(nodes)} data nodes restarted", self._elapsed())
        return nodes

    async def _rollback(
        self, plan: _Plan, original: bytes, value: str, cause: NdbError
    ) -> NdbError:
        notes: list[str] = []
        try:
            await self.host.write_file_atomic(self.config_path, original, self.file_mode)
            self._report("rollback", None, "config.ini restored", self._elapsed())
            try:
                await self._reload_mgmd(plan, probe=True)
                self._report("rollback", None, "ndb_mgmd reloaded", self._elapsed())
                notes.append(
                    f"{self.config_path} restored and ndb_mgmd reloaded with the previous "
                    "configuration"
                )
            except NdbError as again:
                notes.append(
                    f"{self.config_path} restored, but reloading ndb_mgmd failed too "
                    f"(restart it by hand with --reload): {again}"
                )
        except (HostError, OSError) as again:
            notes.append(
                f"restoring {self.config_path} failed ({again}); the previous version is "
                f"{self.config_path}.prev"
            )
        if plan.restarted:
            notes.append(
                f"data nodes {plan.restarted} already run with {self.parameter}={value}; "
                "restart them again to return to the previous value"
            )
        else:
            notes.append("no data node was restarted")
        message = f"{cause}\nrollback: " + "; ".join(notes)
        return NdbError(message, step=cause.step, node=cause.node, output=cause.output)


# ---------------------------------------------------------------------------------------
# ndbinfo.diskpagebuffer hit ratio
# ---------------------------------------------------------------------------------------

# One row per (node, block instance) in ndbinfo.diskpagebuffer; the manual's query
# (https://dev.mysql.com/doc/refman/8.0/en/mysql-cluster-ndbinfo-diskpagebuffer.html) computes
# the ratio per row. Summed per node it is the node's ratio. The counters (pages served from
# the buffer, pages read from disk) come back raw so deltas can be taken between samples.
HIT_RATIO_SQL = (
    "SELECT node_id, SUM(page_requests_direct_return), SUM(page_requests_wait_io) "
    "FROM ndbinfo.diskpagebuffer GROUP BY node_id ORDER BY node_id"
)


class _Queryable(Protocol):
    async def query(self, sql: str, args: Sequence[Any] | None = None) -> list[tuple[Any, ...]]: ...


def _sums(rows: Iterable[Sequence[Any]]) -> dict[int, tuple[int, int]]:
    sums: dict[int, tuple[int, int]] = {}
    for row in rows:
        node, direct, wait_io = int(row[0]), int(row[1] or 0), int(row[2] or 0)
        d, w = sums.get(node, (0, 0))
        sums[node] = (d + direct, w + wait_io)
    return sums


def _ratio(direct: int, wait_io: int) -> float | None:
    total = direct + wait_io
    return direct / total if total > 0 else None


def hit_ratio_from_rows(rows: Iterable[Sequence[Any]]) -> dict[int, float]:
    """Per node, direct / (direct + wait_io) as a fraction (the manual's < 95 % means raise
    DiskPageBufferMemory). Rows are (node_id, direct_return, wait_io), grouped or per block
    instance; a node with no page requests has no value."""
    ratios: dict[int, float] = {}
    for node, (direct, wait_io) in _sums(rows).items():
        ratio = _ratio(direct, wait_io)
        if ratio is not None:
            ratios[node] = ratio
    return ratios


def per_interval_hit_ratio(
    prev_rows: Iterable[Sequence[Any]], cur_rows: Iterable[Sequence[Any]]
) -> dict[int, float]:
    """Per node hit ratio of the requests between two samples (counter deltas).

    A node missing from either sample, with no requests in between, or whose counters went
    down (it restarted, which is what a DiskPageBufferMemory change does) has no value.
    """
    prev = _sums(prev_rows)
    ratios: dict[int, float] = {}
    for node, (direct, wait_io) in _sums(cur_rows).items():
        if node not in prev:
            continue
        d_direct, d_wait = direct - prev[node][0], wait_io - prev[node][1]
        if d_direct < 0 or d_wait < 0:
            continue
        ratio = _ratio(d_direct, d_wait)
        if ratio is not None:
            ratios[node] = ratio
    return ratios


async def diskpagebuffer_hit_ratio(link: _Queryable) -> dict[int, float]:
    """Cumulative per-node disk page buffer hit ratio (since each node started)."""
    return hit_ratio_from_rows(await link.query(HIT_RATIO_SQL))
