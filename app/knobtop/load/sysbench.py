"""Sysbench on a Host: prepare with progress, run with per-second reports, stop without orphans."""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import PurePosixPath

from knobtop.hosts.base import Host, HostError, RunningCommand
from knobtop.load.base import (
    BUILTIN_ONLY,
    TIME_CAP,
    ExitCallback,
    LoadDriver,
    LoadError,
    LoadExit,
    LoadSpec,
    ReportCallback,
    TableDriver,
)
from knobtop.load.sysbench_options import declared_options, listed_options
from knobtop.load.sysbench_output import (
    IntervalReport,
    PrepareProgress,
    RunSummary,
    SysbenchError,
    SysbenchOutputParser,
)

INSTALL_HINT = "install it with `sudo apt-get install -y sysbench`"


def missing_tables_hint(database: str) -> str:
    """What to do when the load's tables are not there."""
    return (f"The sysbench tables are missing in {database}: press P in the live screen to "
            "prepare them, or start knobtop with --load WORKLOAD, which prepares them")


def explain(error: str, host: str = "", database: str = "sbtest") -> str:
    """sysbench's error, plus what to do about the common ones."""
    if not error:
        return error
    where = f" on {host}" if host else ""
    if "doesn't exist" in error:
        return f"{error}. {missing_tables_hint(database)}"
    if "Access denied" in error:
        return f"{error}. Check the MySQL user and password source in the profile"
    if "Can't connect" in error or "Unknown MySQL server host" in error:
        return (f"{error}. sysbench{where} cannot reach the server: set mysql_host/mysql_port "
                "for this client in the profile")
    if "Cannot find benchmark" in error or "no such built-in test" in error:
        return f"{error}. Is the workload name right, or the .lua path correct{where}?"
    return error


def summarize_errors(errors: list[str], keep: int = 2) -> str:
    """The distinct FATAL messages, the server's own ("MySQL error: 1146 ...") first.

    Every sysbench thread prints its own lines, interleaved in no fixed order; without
    this the generic "mysql_stmt_prepare() failed" of two threads could hide the cause.
    """
    distinct = list(dict.fromkeys(e for e in errors if e))
    distinct.sort(key=lambda e: 0 if _SERVER_ERROR.search(e) else 1)
    return "; ".join(distinct[:keep])


# The server's own error as sysbench prints it: "MySQL error: 1146 ..." (a statement),
# "error 1045: Access denied ..." (connecting).
_SERVER_ERROR = re.compile(r"\berror:? \d{4}\b", re.IGNORECASE)


# sysbench 1.0's options-file reader (read_config in src/sb_options.c): fgets into 256
# bytes, the option name ends at the first '=', an unquoted value ends at whitespace or
# ',' and '#' starts a comment; a value in '...' or "..." runs to the next same quote,
# with no escapes.  So the password goes quoted, in one line of at most 255 bytes.
_PASSWORD_OPTION = "mysql-password="
PASSWORD_MAX_BYTES = 255 - len(_PASSWORD_OPTION) - 2  # the two quotes


def password_option(password: str) -> bytes:
    """The options-file line that sysbench reads back as exactly ``password``.

    Raises LoadError saying why when no such line exists (a line break or NUL; both
    quote characters; too long), so a load refuses before it starts instead of
    failing at login with a misleading "check the password".
    """
    why = "sysbench cannot be given this MySQL password: "
    if "\n" in password or "\0" in password:
        raise LoadError(why + "it has a line break or NUL byte, and sysbench's options file "
                        "holds one option per line. Set a password without one")
    if '"' not in password:
        quote = '"'
    elif "'" not in password:
        quote = "'"
    else:
        raise LoadError(why + "it has both ' and \", and sysbench's options file reads a "
                        "quoted value up to the next same quote, with no escapes. Set a "
                        "password without one of the two")
    try:
        encoded = password.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise LoadError(why + "it is not valid text (a lone surrogate character). Set the "
                        "password again as UTF-8 text") from None
    if len(encoded) > PASSWORD_MAX_BYTES:
        raise LoadError(why + f"it is {len(encoded)} bytes long, and sysbench reads its "
                        f"options file in 255-byte lines, which leaves {PASSWORD_MAX_BYTES} "
                        "bytes for it. Set a shorter password")
    return f"{_PASSWORD_OPTION}{quote}".encode() + encoded + f"{quote}\n".encode()


# The deprecated aliases at the values sysbench reads as "not given" (see Sysbench.argv).
_ALIASES_OFF = ("--num-threads=1", "--max-time=0", "--max-requests=0", "--tx-rate=0")


class Sysbench:
    """sysbench 1.0 driven on ``host`` against one server.

    The password never goes on the command line (where ``ps`` shows it to
    every user): it is written to a 0600 file on the host, passed with
    ``--config-file``, and removed when the command ends.
    """

    name = "sysbench"

    def __init__(
        self,
        host: Host,
        *,
        mysql_host: str = "127.0.0.1",
        mysql_port: int = 3306,
        mysql_socket: str | None = None,
        user: str = "root",
        password: str = "",
        database: str = "sbtest",
        binary: str = "sysbench",
    ) -> None:
        self.host = host
        self.host_name = host.name
        self._address = (mysql_host, mysql_port, mysql_socket)
        # A socket, once given, wins over host and port (drv_mysql.c): by TCP knobtop
        # empties the list ("--mysql-socket=" drops earlier values), so no earlier
        # --mysql-socket can take the connection elsewhere.
        self._target = (
            [f"--mysql-socket={mysql_socket}"]
            if mysql_socket
            else [f"--mysql-host={mysql_host}", f"--mysql-port={mysql_port}",
                  "--mysql-socket="]
        )
        self._user = user
        self._password = password
        self.database = database
        self.binary = binary
        self.src = f"sysbench@{host.name}"
        self.version = ""
        self._proc: RunningCommand | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stopping = False

    def parts(self) -> list[LoadDriver]:
        return [self]

    def clone(self, suffix: str, number: int = 0) -> Sysbench:
        """This client's load on database ``sbtest_SUFFIX`` (tables of another shape) and,
        with ``number``, as instance ``number`` of several: its own sysbench process on its
        own database (``sbtest_i3``), reporting as ``sysbench@HOST#3``."""
        mysql_host, mysql_port, mysql_socket = self._address
        database = "_".join(p for p in (self.database, suffix,
                                        f"i{number}" if number else "") if p)
        clone = Sysbench(self.host, mysql_host=mysql_host, mysql_port=mysql_port,
                         mysql_socket=mysql_socket, user=self._user, password=self._password,
                         database=database[:64], binary=self.binary)
        if number:
            clone.host_name = f"{self.host_name}#{number}"
            clone.src = f"sysbench@{clone.host_name}"
        clone.version = self.version
        return clone

    def table_drivers(self) -> list[TableDriver]:
        return [self]

    @property
    def running(self) -> bool:
        return self._proc is not None

    def argv(
        self, spec: LoadSpec, command: str, *extra: str, config: str | None = None
    ) -> list[str]:
        """sysbench's command line: the workload's options first, then knobtop's own.

        sysbench takes the last of an option given twice, and the options an options
        file holds where ``--config-file`` stands: so knobtop's connection (the password
        file included) and its run arguments (``extra``) come after every option the load
        passes, for every command, and an option that slipped past the check still could
        not move them.
        """
        return [
            self.binary,
            spec.workload,
            *spec.option_args(),
            *([f"--config-file={config}"] if config else []),
            "--db-driver=mysql",
            *self._target,
            f"--mysql-user={self._user}",
            f"--mysql-db={self.database}",
            f"--tables={spec.tables}",
            f"--table-size={spec.table_size}",
            *([f"--mysql-storage-engine={spec.engine}"] if spec.engine else []),
            # sysbench 1.0.20 lets these deprecated aliases win over --threads, --time,
            # --events and --rate whatever their order (init() in src/sysbench.c): at
            # these values they stand aside.
            *_ALIASES_OFF,
            *extra,
            command,
        ]

    @contextlib.asynccontextmanager
    async def _secret_config(self) -> AsyncIterator[str | None]:
        """A 0600 options file holding the password, for the life of one command."""
        if not self._password:
            yield None
            return
        line = password_option(self._password)
        path = PurePosixPath(f"/tmp/knobtop-sysbench-{secrets.token_hex(8)}.cfg")
        await self.host.write_file_atomic(path, line)
        try:
            yield str(path)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.host.run(["rm", "-f", str(path)], limit=30))

    async def check_installed(self) -> str:
        """sysbench's path on the host; raises LoadError when it is missing or cannot be
        given the password (every command asks this first, so nothing has started)."""
        if self._password:
            password_option(self._password)
        path = await self.host.which(self.binary)
        if path is None:
            raise LoadError(f"sysbench is not installed on {self.host.name}: {INSTALL_HINT}")
        if not self.version:
            result = await self.host.run([self.binary, "--version"], limit=15)
            self.version = result.stdout.strip().removeprefix("sysbench ").split(" ")[0]
        return path

    async def check_options(self, spec: LoadSpec) -> None:
        """Refuse, before any command runs, an option sysbench would not take as the
        workload's own.  A custom script's allow-list is what it declares: what
        ``sysbench SCRIPT help`` lists on this host, less what ``sysbench --help`` lists
        (sysbench's own options, which it takes before any script's)."""
        spec.check_options()
        if not (spec.custom and spec.options):
            return
        listing = await self.host.run([self.binary, spec.workload, "help"], limit=30)
        # a script that declares no options has no help to print: it takes none
        declares_none = "does not implement the 'help' command" in listing.stderr
        if listing.returncode != 0 and not declares_none:
            detail = (listing.stderr.strip() or listing.stdout.strip())[-300:]
            raise LoadError(f"cannot list the options of {spec.workload} on "
                            f"{self.host.name} (sysbench {spec.workload} help: {detail}); "
                            "correct the script, or run it without options")
        declared = declared_options(listing.stdout, spec.workload)
        general = await self.host.run([self.binary, "--help"], limit=30)
        spec.check_options(declared or {}, listed_options(general.stdout))

    async def prepare(
        self, spec: LoadSpec, progress: Callable[[PrepareProgress], None] | None = None
    ) -> None:
        """Create and fill the tables, reporting each step (no time limit: big sets take long)."""
        refuse_builtin_only(spec)
        spec.check_engine()
        await self.check_installed()
        await self.check_options(spec)
        async with self._secret_config() as config:
            argv = self.argv(spec, "prepare", f"--threads={min(spec.tables, 4)}", config=config)
            proc = await self.host.stream(argv)
            parser = SysbenchOutputParser()
            errors: list[str] = []
            try:
                async for line in proc.lines():
                    for item in parser.feed(line):
                        if isinstance(item, PrepareProgress) and progress is not None:
                            progress(item)
                        elif isinstance(item, SysbenchError):
                            errors.append(item.message)
                rc = await proc.wait()
            finally:
                # Cancelled (Ctrl+C) mid-load: do not leave sysbench filling tables.
                await asyncio.shield(proc.stop())
        if rc != 0:
            detail = "; ".join(errors) or proc.stderr_tail.strip() or f"exit code {rc}"
            raise LoadError(f"sysbench prepare failed on {self.host.name}: {explain(detail)}")

    async def cleanup(self, spec: LoadSpec) -> None:
        await self.check_installed()
        await self.check_options(spec)
        async with self._secret_config() as config:
            result = await self.host.run(self.argv(spec, "cleanup", config=config), limit=300)
        if result.returncode != 0:
            raise LoadError(f"sysbench cleanup failed: {result.stderr.strip()[-300:]}")

    async def start(self, spec: LoadSpec, on_report: ReportCallback, on_exit: ExitCallback) -> None:
        spec.check()
        refuse_builtin_only(spec)
        if self._proc is not None:
            raise LoadError("sysbench is already running; stop it first")
        await self.check_installed()
        await self.check_options(spec)
        config_cm = self._secret_config()
        config = await config_cm.__aenter__()
        argv = self.argv(
            spec,
            "run",
            f"--threads={spec.threads}",
            f"--time={spec.duration or TIME_CAP}",
            "--report-interval=1",
            f"--percentile={spec.percentile}",
            f"--rand-type={spec.rand_type}",
            f"--db-ps-mode={'auto' if spec.prepared else 'disable'}",
            *([f"--rate={spec.rate}"] if spec.rate else []),
            config=config,
        )
        try:
            self._proc = await self.host.stream(argv)
        except HostError as exc:
            await config_cm.__aexit__(None, None, None)
            raise LoadError(f"{exc}; {INSTALL_HINT}") from None
        self._stopping = False
        self._reader = asyncio.create_task(
            self._read(self._proc, on_report, on_exit, config_cm)
        )

    async def _read(
        self,
        proc: RunningCommand,
        on_report: ReportCallback,
        on_exit: ExitCallback,
        config_cm: contextlib.AbstractAsyncContextManager[str | None],
    ) -> None:
        parser = SysbenchOutputParser()
        summary: RunSummary | None = None
        errors: list[str] = []
        rc: int | None = None
        password_file = True
        try:
            async for line in proc.lines():
                if password_file:
                    # sysbench reads --config-file before it prints anything: the password
                    # file goes now, so not even a kill -9 of knobtop leaves it behind.
                    password_file = False
                    with contextlib.suppress(Exception):
                        await config_cm.__aexit__(None, None, None)
                for item in parser.feed(line):
                    if isinstance(item, IntervalReport):
                        on_report(self.src, item)
                    elif isinstance(item, RunSummary):
                        summary = item
                    elif isinstance(item, SysbenchError):
                        errors.append(item.message)
            rc = await proc.wait()
        except HostError as exc:  # the SSH connection to the client dropped
            errors.append(str(exc))
        finally:
            self._proc = None
            if password_file:
                with contextlib.suppress(Exception):
                    await config_cm.__aexit__(None, None, None)
        error = summarize_errors(errors)
        if not error and rc not in (0, None) and not self._stopping:
            error = proc.stderr_tail.strip()[-300:] or f"sysbench exited with code {rc}"
        error = explain(error, self.host.name, self.database)
        await on_exit(LoadExit(rc, summary, error, self._stopping))

    async def stop(self) -> LoadExit | None:
        proc, reader = self._proc, self._reader
        if proc is None:
            return None
        self._stopping = True
        try:
            rc = await proc.stop()
        except HostError:
            rc = None  # the host is gone; its wrapper ends the command on its own
        if reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        return LoadExit(rc, None, "", True)


def refuse_builtin_only(spec: LoadSpec) -> None:
    """A workload only the built-in driver runs (LinkBench) is refused naming the fix."""
    if spec.workload in BUILTIN_ONLY:
        raise LoadError(f"sysbench has no {spec.workload} workload: knobtop's built-in "
                        "driver runs it (--driver builtin)")
