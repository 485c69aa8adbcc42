"""One topology (issue 37): a screen test drives a session in a process of its own, as
`knobtop lab` does, never a Session object in the test's own process.  This reads every test
module and fails on a KnobtopApp handed a session built in-process."""

from __future__ import annotations

import ast

from harness import paths as repo_paths

TESTS = repo_paths.TESTS
# What builds a Session object in the test's own process.
IN_PROCESS = {"Session", "session_for", "lab_session"}


def _called(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        return func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else None)
    return None


def in_process_screens(source: str) -> list[int]:
    """Lines where a KnobtopApp gets a session built in this process (directly, or through
    a name bound to one in the same function)."""
    tree = ast.parse(source)
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        bound = {t.id for node in ast.walk(func) if isinstance(node, ast.Assign)
                 and _called(node.value) in IN_PROCESS
                 for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(func):
            if _called(node) == "KnobtopApp" and isinstance(node, ast.Call) and node.args:
                first = node.args[0]
                if _called(first) in IN_PROCESS or (
                        isinstance(first, ast.Name) and first.id in bound):
                    found.append(node.lineno)
    return sorted(set(found))


def test_no_screen_test_drives_a_session_in_its_own_process() -> None:
    offenders = {str(p.relative_to(TESTS)): lines for p in sorted(TESTS.rglob("test_*.py"))
                 if (lines := in_process_screens(p.read_text()))}
    assert offenders == {}, (
        f"{offenders}: give the screen a session served in its own process "
        "(harness.served.served_session), as knobtop lab does")


def test_the_check_sees_both_shapes() -> None:
    direct = "def t():\n    app = KnobtopApp(Session(config, host, None))\n"
    named = "async def t():\n    s = lab_session(box, j)\n    app = KnobtopApp(s, tune=x)\n"
    served = "def t():\n    with served_session(c) as s:\n        app = KnobtopApp(s)\n"
    assert in_process_screens(direct) == [2]
    assert in_process_screens(named) == [3]
    assert in_process_screens(served) == []
