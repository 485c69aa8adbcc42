"""`knobtop serve`: the follow view for browsers, through textual-serve (a Textual tool,
so it lives under ui/)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from aiohttp import web
from rich.console import Console
from textual_serve.server import Server

from knobtop.journal.events import Header


def serve_follow(path: Path, header: Header, *, host: str, port: int, public: bool,
                 public_url: str | None, history: float, console: Console) -> None:
    """Serve `knobtop follow PATH` to browsers until interrupted (checks done by the CLI)."""
    command = shlex.join([sys.executable, "-m", "knobtop", "follow", str(path.resolve()),
                          "--history", f"{history:g}"])

    class FollowServer(Server):
        async def on_startup(self, app: web.Application) -> None:
            console.print(f"knobtop serve: following {path} (profile {header.profile}) "
                          f"at {self.public_url}  (Ctrl+C stops)", highlight=False)
            if public:
                console.print(f"[bold yellow]Public:[/] anyone who can reach {host} "
                              f"port {port} watches this session.", highlight=False)
            if host.strip("[]") in ("0.0.0.0", "::") and public_url is None:
                # The page tells the browser where its websocket is: 0.0.0.0 works only here.
                console.print("[bold yellow]Note:[/] browsers on other machines need "
                              f"--public-url http://THIS-HOST:{port}", highlight=False)

    url = public_url
    if url is None and ":" in host:  # an IPv6 literal needs its brackets
        url = f"http://[{host.strip('[]')}]:{port}"
    server = FollowServer(command, host=host.strip("[]"), port=port,
                          title=f"knobtop follow {path.name}", public_url=url)
    server.serve()
