"""`build_parser(only=COMMAND)`: a command's run builds the top level and its own parser
alone (a report's start), and what it prints is what the whole parser prints."""

from __future__ import annotations

import contextlib
import io

import pytest

from knobtop.cli.parser import COMMANDS, build_parser, command_of


def said(argv: list[str], only: str | None) -> tuple[int | str | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            build_parser(only).parse_args(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("command", list(COMMANDS))
def test_one_commands_parser_says_what_the_whole_one_says(command: str) -> None:
    assert command_of([command, "--x"]) == command
    for argv in ([command, "--help"], [command, "--no-such-flag"], [command, "a", "b", "c",
                                                                     "d", "e"]):
        whole, alone = said(argv, None), said(argv, command)
        assert whole == alone, argv
        if "-" in argv[1]:
            assert whole[1] or whole[2]  # each said something: help, or an error
    assert said([command], None) == said([command], command)


def test_anything_else_gets_the_whole_parser() -> None:
    assert command_of([]) is None and command_of(["--version"]) is None
    assert command_of(["reprot"]) is None
    code, _out, err = said(["reprot"], command_of(["reprot"]))
    assert code == 2 and "invalid choice: 'reprot'" in err and "report" in err
    assert said(["--help"], None)[1].count("\n") > 20  # every command listed
