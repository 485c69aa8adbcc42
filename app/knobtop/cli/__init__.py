"""The knobtop command line: parses arguments into options and hands each command to its handler.

The package's parts: ``parser`` (every command and flag; imports nothing heavy, so
`knobtop --version` and `--help` start at once), ``live`` (lab, connect, run: options for
one build_session() and a front end) and ``views`` (follow, serve, replay, report, compare).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from knobtop.cli.parser import Handler, build_parser, command_of
from knobtop.errors import KnobtopError
from knobtop.lazyface import lazy_names

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs 4 ms of start-up
if TYPE_CHECKING:
    from knobtop.cli.live import recipe_from_args, run_session
    from knobtop.cli.views import (
        folder_following_app,
        follow_target,
        following_app,
        is_loopback_host,
        replay_for,
        ui_config,
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(command_of(argv)).parse_args(argv)
    handler: Handler = args.func
    try:
        return handler(args)
    except KnobtopError as exc:  # every knobtop error says what went wrong and the fix
        said, code = str(exc), 2
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        said, code = f"{exc.strerror or exc}{where}", 2
    except KeyboardInterrupt:
        said, code = "", 130
    from knobtop.cli.views import stderr_console
    from knobtop.headless import labelled

    if code == 130:
        stderr_console().print("knobtop: interrupted")
    else:
        stderr_console().print(labelled("knobtop:", said), highlight=False)
    return code


__getattr__ = lazy_names(__name__, {
    "following_app": "knobtop.cli.views",
    "folder_following_app": "knobtop.cli.views",
    "follow_target": "knobtop.cli.views",
    "is_loopback_host": "knobtop.cli.views",
    "replay_for": "knobtop.cli.views",
    "ui_config": "knobtop.cli.views",
    "recipe_from_args": "knobtop.cli.live",
    "run_session": "knobtop.cli.live",
})

__all__ = ["build_parser", "folder_following_app", "follow_target", "following_app",
           "is_loopback_host", "main", "recipe_from_args", "replay_for",
           "run_session", "ui_config"]
