"""Every knobtop command in the README and docs/ parses with knobtop's own parser, and the
tutorials' runnable examples run, in order, against one lab sandbox.

A fenced ```sh or ```console block is checked line by line (a trailing backslash joins
lines; a `$ ` prompt and `# comments` are dropped); lines that start `.venv/bin/knobtop` or
`knobtop` are commands. An HTML comment on the line before a block says what else to do:

* ``<!-- docs-test: run -->``: run the block's commands against the lab sandbox (a command
  with `lab`, or `run`/`tune` with `--lab`, gets the sandbox's `--dir`), in a folder shared
  by the page's blocks, each to exit 0;
* ``<!-- docs-test: run shortened: ARGS -->``: the same, with ARGS added after each `run` or
  `tune` command (argparse takes the last of a repeated option), where the command as
  written runs for minutes (a search's trials, an A/A run's replicates): the command is
  the one the page shows, its budget the test's.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import paths as repo_paths

REPO = repo_paths.REPO
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
BLOCK = re.compile(r"(?:<!-- docs-test: (\w+)(?: shortened: ([^>]*?))? -->\n)?"
                   r"^ *```(?:sh|console|bash)\n(.*?)^ *```", re.MULTILINE | re.DOTALL)
PROGRAMS = (".venv/bin/knobtop", "knobtop")


@dataclass(frozen=True)
class Command:
    page: Path
    line: str
    mode: str  # "" or "run"
    shortened: tuple[str, ...] = ()  # what the test adds to a run/tune command it runs

    @property
    def args(self) -> list[str]:
        return shlex.split(self.line)[1:]

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}: {self.line}"


def commands(page: Path) -> list[Command]:
    out = []
    for m in BLOCK.finditer(page.read_text(encoding="utf-8")):
        mode = m.group(1) or ""
        shortened = tuple(shlex.split(m.group(2) or ""))
        joined = re.sub(r"\\\n\s*", " ", m.group(3))
        for raw in joined.splitlines():
            line = raw.strip().removeprefix("$ ")
            line = re.sub(r"\s+#.*$", "", line)  # a comment after the command
            line = re.split(r"\s+(?:[0-9]?>|\||&&)\s", line)[0]  # a redirection or pipe
            if line.split(" ", 1)[0] in PROGRAMS:
                out.append(Command(page, line, mode, shortened))
    return out


ALL = [c for page in PAGES for c in commands(page)]


def parse(args: list[str]) -> str:
    """"" when knobtop's parser takes ``args``, else what it printed."""
    from knobtop.cli.parser import build_parser

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(args)
        except SystemExit as exc:
            return err.getvalue() or f"exit {exc.code}"
    return ""


def test_the_docs_have_commands_of_every_kind() -> None:
    assert len(ALL) > 40
    assert {c.args[0] for c in ALL} >= {"lab", "connect", "run", "tune", "replay", "follow",
                                        "serve", "report", "compare"}
    assert sum(c.mode == "run" for c in ALL) >= 3


@pytest.mark.parametrize("command", ALL, ids=str)
def test_every_command_parses(command: Command) -> None:
    assert parse(command.args) == ""


def test_a_redirection_is_not_taken_for_arguments(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("```sh\nknobtop report j.jsonl > out.md  # keep it\n"
                    "knobtop report j.jsonl 2> err | head\n```\n")
    assert [c.args for c in commands(page)] == [["report", "j.jsonl"]] * 2


def test_a_mistyped_command_would_be_caught() -> None:
    assert "unrecognized arguments: --no-such-flag" in parse(["lab", "--no-such-flag"])
    assert parse(["report"]) != ""  # its journal is required


def with_sandbox(args: list[str], where: Path) -> list[str]:
    on_lab = args[0] == "lab" or (args[0] in ("run", "tune") and "--lab" in args)
    if on_lab and "--dir" not in args:
        return [args[0], "--dir", str(where), *args[1:]]
    return args


RUNNABLE = sorted({c.page for c in ALL if c.mode == "run"})


@pytest.mark.integration
@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: str(p.relative_to(REPO)))
def test_the_runnable_examples_run_on_the_lab(
        page: Path, lab: tuple[Path, object], tmp_path: Path) -> None:
    where, _info = lab
    for command in (c for c in commands(page) if c.mode == "run"):
        args = command.args
        if args[0] in ("run", "tune"):
            args = [*args, *command.shortened]
        argv = [sys.executable, "-m", "knobtop", *with_sandbox(args, where)]
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, check=False, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        # (run and tune print their tables and the journal's name on the terminal's stderr)
        said = (done.stdout + done.stderr).strip()
        assert said or any(tmp_path.iterdir()), f"{command}: said nothing"


def test_a_shortened_block_adds_its_budget_to_run_and_tune_only(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("<!-- docs-test: run shortened: --trials 2 --duration 2 -->\n```sh\n"
                    "knobtop tune s --lab --trials 8\nknobtop report j.jsonl\n```\n")
    tune, report = commands(page)
    assert tune.mode == report.mode == "run"
    assert tune.shortened == ("--trials", "2", "--duration", "2")
    assert parse([*tune.args, *tune.shortened]) == ""  # the last --trials is the one taken


def test_with_sandbox_gives_the_lab_commands_the_sandbox() -> None:
    where = Path("/x")
    assert with_sandbox(["lab", "--headless"], where) == ["lab", "--dir", "/x", "--headless"]
    assert with_sandbox(["run", "r", "--lab"], where)[:3] == ["run", "--dir", "/x"]
    assert with_sandbox(["report", "j"], where) == ["report", "j"]
