"""Nothing outside app/knobtop/ui imports textual (the core stays usable without a screen)."""

from __future__ import annotations

import ast
from pathlib import Path

from harness import paths as repo_paths

APP = repo_paths.REPO / "app" / "knobtop"


TEXTUAL = ("textual", "textual_serve")  # Textual and its tools belong to ui/


def textual_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in TEXTUAL]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.split(".")[0] in TEXTUAL
        ):
            found.append(node.module)
    return found


def test_core_never_imports_textual() -> None:
    core = [p for p in APP.rglob("*.py") if "ui" not in p.relative_to(APP).parts]
    assert len(core) > 10  # the walk found the package
    leaks = {str(p.relative_to(APP)): textual_imports(p) for p in core if textual_imports(p)}
    assert leaks == {}


def test_the_check_would_catch_a_leak(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom textual.widgets import Static\nimport textual\n"
                   "from textual_serve.server import Server\n")
    assert textual_imports(bad) == ["textual.widgets", "textual", "textual_serve.server"]
