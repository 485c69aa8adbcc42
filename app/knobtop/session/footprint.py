"""Reading the server's footprint (metrics.footprint) on the server's own host: mysqld's
CPU and RSS from /proc/PID/stat and status (the PID from the server's pid file), the
datadir device's counters from /proc/diskstats (the device found from the datadir's
``stat``), ``du`` of the datadir and the databases' size from information_schema.

One ``sh`` command per reading on the target's host (local, or one SSH round trip) and
one query, each with a deadline. Figures that cannot be read are None and ``problem``
says why: a target reached without SSH is another machine (this host's /proc would be
the wrong one), a datadir on tmpfs or overlay has no device of its own."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable, Sequence
from dataclasses import replace

from knobtop.hosts.base import Host, HostError
from knobtop.hosts.procstat import (
    ProcParseError,
    device_counters,
    device_numbers,
    parse_pid_stat,
    parse_status_rss,
    split_sections,
)
from knobtop.metrics.footprint import Footprint
from knobtop.printable import printable
from knobtop.server.link import ServerError, ServerLink

LIMIT = 15.0  # seconds for each command and query (du of a big datadir takes a while)
# Schemas that are the server's own, not the experiment's data.
SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
# The databases' size: InnoDB's tablespace files as they are on disk (TABLES' DATA_LENGTH is
# the statistics' estimate, minutes behind a load), other engines' DATA_LENGTH +
# INDEX_LENGTH. The InnoDB view is INNODB_SYS_TABLESPACES on MariaDB and MySQL 5.7,
# INNODB_TABLESPACES on MySQL 8.0; without either, TABLES alone.
INNODB_VIEWS = ("INNODB_SYS_TABLESPACES", "INNODB_TABLESPACES")


def db_size_queries(schemas: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The statements (most exact first) and their arguments that size ``schemas``, or
    every schema but the server's own when none are given."""
    names = tuple(schemas) or SYSTEM_SCHEMAS
    where = ("IN" if schemas else "NOT IN") + " (" + ", ".join(["%s"] * len(names)) + ")"
    other = ("SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) FROM "
             f"information_schema.TABLES WHERE TABLE_SCHEMA {where}")
    out = [(f"SELECT (SELECT COALESCE(SUM(FILE_SIZE), 0) FROM information_schema.{view} "
            f"WHERE NAME LIKE '%%/%%' AND SUBSTRING_INDEX(NAME, '/', 1) {where}) + "
            f"({other} AND ENGINE <> 'InnoDB')", names * 2) for view in INNODB_VIEWS]
    return [*out, (other, names)]


MYSQLD_NAMES = ("mysqld", "mariadbd")
NOT_A_PID = "not-a-pid"  # what the script says for a pid file that holds anything else


def locate_script(datadir: str) -> str:
    """The shell command that prints the host's name and the datadir's device number."""
    return f"hostname; stat -L -c %d -- {shlex.quote(datadir)}"


def host_script(datadir: str, pid_file: str, sizes: bool) -> str:
    """The shell command that prints /proc/diskstats, the pid file's process id (only when
    it is one: digits, else NOT_A_PID) with that process's stat and status, and with
    ``sizes`` the datadir's ``du``.  Every path is quoted and follows ``--`` (a datadir
    named ``-x`` is not an option), and the pid is used only quoted and only as digits:
    a pid file holding ``1 /secret /`` must not make ``cat`` read /secret."""
    return (
        "echo @@diskstats; cat /proc/diskstats; "
        f"pid=$(cat -- {shlex.quote(pid_file)} 2>/dev/null); echo @@pid; "
        'case "$pid" in "") echo;; *[!0-9]*) echo ' + NOT_A_PID + ";; "
        '*) echo "$pid"; echo @@stat; cat -- "/proc/$pid/stat"; '
        'echo @@status; cat -- "/proc/$pid/status";; esac'
        + (f"; echo @@du; du -sb -- {shlex.quote(datadir)} 2>/dev/null || echo partial"
           if sizes else ""))


class FootprintProbe:
    """Reads footprints of the server behind ``link`` on ``host`` (its own machine)."""

    def __init__(self, host: Host, link: Callable[[], ServerLink],
                 now: Callable[[], float], limit: float = LIMIT) -> None:
        self.host = host
        self._link = link
        self._now = now
        self.limit = limit
        self._where: tuple[str, str, int, int] | None = None  # datadir, pid file, device
        self.problem = ""  # why the process and device figures are missing

    async def _server_facts(self) -> tuple[str, str, str]:
        link = self._link()
        try:
            async with asyncio.timeout(self.limit):
                await link.connect()
                rows = await link.query("SELECT @@datadir, @@pid_file, @@hostname")
        finally:
            await link.close()
        datadir, pid_file, hostname = (str(v or "") for v in rows[0])
        return datadir, pid_file, hostname

    async def _locate(self) -> tuple[str, str, int, int] | None:
        if self._where is not None or self.problem:
            return self._where
        datadir, pid_file, server_host = await self._server_facts()
        result = await self.host.run(["sh", "-c", locate_script(datadir)], limit=self.limit)
        lines = result.stdout.split()
        here = lines[0] if lines else ""
        if server_host and here != server_host:
            self.problem = (f"the server runs on host {server_host!r} but knobtop reads "
                            f"{self.host.name} ({here!r}): mysqld's CPU and RSS and the "
                            "datadir's disk need the target's own host (give the profile's "
                            "target an ssh destination)")
            return None
        if result.returncode != 0 or len(lines) < 2 or not lines[1].isdigit():
            self.problem = (f"cannot stat the datadir {datadir} on {self.host.name}: "
                            f"{result.stderr.strip()[-200:] or 'no answer'}")
            return None
        major, minor = device_numbers(int(lines[1]))
        self._where = (datadir, pid_file, major, minor)
        return self._where

    async def read(self, sizes: bool = False, schemas: Sequence[str] = ()) -> Footprint:
        """A reading now; ``sizes`` also measures the datadir and the databases
        (``schemas``, the load's; every one but the server's own when empty)."""
        t = self._now()
        try:
            where = await self._locate()
            fp = Footprint(t=t, problem=self.problem)
            if where is not None:
                fp = await self._read_host(t, where, sizes)
            if sizes:
                fp = replace(fp, db_bytes=await self._db_bytes(schemas))
        except (HostError, ServerError, TimeoutError, OSError, ProcParseError,
                ValueError) as exc:
            fp = Footprint(t=t, problem=f"server footprint: {exc}")
        # The problem names the server's paths and a host's stderr: text from outside.
        return replace(fp, problem=printable(fp.problem, newlines=False))

    async def _read_host(self, t: float, where: tuple[str, str, int, int],
                         sizes: bool) -> Footprint:
        datadir, pid_file, major, minor = where
        result = await self.host.run(["sh", "-c", host_script(datadir, pid_file, sizes)],
                                     limit=self.limit)
        parts = split_sections(result.stdout)
        found = device_counters(parts.get("diskstats", ""), major, minor)
        problems = [] if found else [f"the datadir {datadir} is on no block device "
                                     f"({major}:{minor}: tmpfs, overlay or a network "
                                     "file system): no disk figures of its own"]
        pid = cpu = rss = None
        if "stat" in parts and "status" in parts:
            name, cpu = parse_pid_stat(parts["stat"])
            if name not in MYSQLD_NAMES:
                problems.append(f"the pid file {pid_file} names process {name!r}, not mysqld")
                cpu = None
            else:
                pid, rss = int(parts["pid"].strip()), parse_status_rss(parts["status"])
        elif parts.get("pid", "").strip() == NOT_A_PID:
            problems.append(f"the pid file {pid_file} does not hold a process id")
        else:
            problems.append(f"no running mysqld in the pid file {pid_file}")
        datadir_bytes = None
        if sizes:
            du = parts.get("du", "").split()
            if du and du[0].isdigit() and "partial" not in du:
                datadir_bytes = float(du[0])
            else:
                problems.append(f"du cannot read all of {datadir} on {self.host.name}")
        return Footprint(t=t, pid=pid, cpu=cpu, rss=rss, disk=found[0] if found else "",
                         io=found[1] if found else None,
                         datadir_bytes=datadir_bytes, problem="; ".join(problems))

    async def _db_bytes(self, schemas: Sequence[str]) -> float | None:
        link = self._link()
        queries = db_size_queries(schemas)
        try:
            async with asyncio.timeout(self.limit):
                await link.connect()
                for i, (sql, args) in enumerate(queries):
                    try:
                        rows = await link.query(sql, args)
                    except ServerError:
                        if i + 1 == len(queries):
                            raise
                        continue  # no such view on this server: the next form
                    return float(rows[0][0]) if rows and rows[0][0] is not None else None
        finally:
            await link.close()
        return None
