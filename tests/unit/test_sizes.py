"""Issue 38 part 8: in app/knobtop no function or method over 80 lines, no class over 400 and
no module over 600, except the single-subject files the issue names (SINGLE_SUBJECT, each with
why) and the DEBT still to be split, a list that only shrinks.

Lines as ast counts them: a module's lines; a class's or function's from its ``def``/``class``
line to its last (decorators not counted, the docstring counted).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache

from harness import paths as repo_paths

ROOT = repo_paths.REPO
PACKAGE = ROOT / "app" / "knobtop"

FUNCTION_LINES = 80
CLASS_LINES = 400
MODULE_LINES = 600

# One subject each, whatever their size (issue 38 names them): the module and its classes.
SINGLE_SUBJECT: dict[str, str] = {
    "analysis/stats.py": "the pieces of one verdict share the rank and quantile helpers and "
                         "the Verdict they fill",
    "hosts/ssh.py": "the SSH host, its key policy, jump hosts and the /proc channel share one "
                    "connection and its reconnect rules",
    "journal/events.py": "every event type of the journal format with the one encoder and "
                         "checker they share",
    "metrics/catalog.py": "the one registry of what knobtop derives and draws, a row per metric",
    "server/catalog.py": "the knob catalog, its fuzzy search and the datadir-bound knobs read "
                         "the same per-flavor tables",
    "journal/index.py": "the index, its background build and its reads share one set of "
                        "offsets and one lock",
    "server/ndb.py": "NDB's config.ini grammar, ndb_mgm's output and the rolling restart are "
                     "one protocol with one set of failure rules",
}

# Over the limits and still to be split: a module by its path, a class by path::Class.  Each
# entry comes off when its split lands (this test says so once it is under its limit); none
# is added.
DEBT: tuple[str, ...] = (
)

# Functions have no allow-list (nor debt: the last one left, metric_graph's _build, was
# split with its module).
FUNCTION_DEBT: tuple[str, ...] = ()


@dataclass(frozen=True)
class Size:
    name: str  # "lab.py", "lab.py::Sandbox", "lab.py::Sandbox.start"
    kind: str  # "module", "class" or "function"
    lines: int
    where: str  # path:line, for the message

    @property
    def limit(self) -> int:
        return {"module": MODULE_LINES, "class": CLASS_LINES}.get(self.kind, FUNCTION_LINES)

    @property
    def over(self) -> bool:
        return self.lines > self.limit

    def __str__(self) -> str:
        return f"{self.where} {self.kind} {self.name}: {self.lines} lines (limit {self.limit})"


def _nested(node: ast.AST, path: str, rel: str, prefix: str) -> list[Size]:
    out: list[Size] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            qualname = f"{prefix}{child.name}"
            assert child.end_lineno is not None
            out.append(Size(f"{rel}::{qualname}",
                            "class" if isinstance(child, ast.ClassDef) else "function",
                            child.end_lineno - child.lineno + 1, f"{path}:{child.lineno}"))
            out += _nested(child, path, rel, f"{qualname}.")
        else:
            out += _nested(child, path, rel, prefix)
    return out


@cache
def sizes() -> tuple[Size, ...]:
    """Every module, class and function (methods and nested ones too) of app/knobtop."""
    out: list[Size] = []
    for file in sorted(PACKAGE.rglob("*.py")):
        rel = file.relative_to(PACKAGE).as_posix()
        path = file.relative_to(ROOT).as_posix()
        text = file.read_text(encoding="utf-8")
        out.append(Size(rel, "module", len(text.splitlines()), path))
        out += _nested(ast.parse(text, filename=path), path, rel, "")
    return tuple(out)


def _single_subject(size: Size) -> bool:
    return size.kind != "function" and size.name.split("::")[0] in SINGLE_SUBJECT


def test_no_function_is_over_80_lines() -> None:
    over = [str(s) for s in sizes()
            if s.kind == "function" and s.over and s.name not in FUNCTION_DEBT]
    assert not over, "split these into functions that read as their steps:\n" + "\n".join(over)


def test_no_class_or_module_is_over_its_limit_unless_listed() -> None:
    over = [str(s) for s in sizes()
            if s.kind != "function" and s.over and not _single_subject(s) and s.name not in DEBT]
    assert not over, ("split these (DEBT only shrinks; SINGLE_SUBJECT is the issue's list):\n"
                      + "\n".join(over))


def test_every_debt_entry_is_still_over_its_limit() -> None:
    found = {s.name: s for s in sizes()}
    under = [f"{name} is under the limit now: take it off {listed}"
             for listed, names in (("DEBT", DEBT), ("FUNCTION_DEBT", FUNCTION_DEBT))
             for name in names
             if name not in found or not found[name].over]
    assert not under, "\n".join(under)


def test_the_lists_name_real_files_once() -> None:
    for rel, reason in SINGLE_SUBJECT.items():
        assert (PACKAGE / rel).is_file(), f"SINGLE_SUBJECT names {rel}, which is not there"
        assert reason and "\n" not in reason, rel
    for name in (*DEBT, *FUNCTION_DEBT):
        assert name.split("::")[0] not in SINGLE_SUBJECT, f"{name} is both allowed and DEBT"
    assert len(set(DEBT)) == len(DEBT) and list(DEBT) == sorted(DEBT)
