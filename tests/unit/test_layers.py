"""The import-linter contracts (pyproject.toml) bite: a copy of the package with one import
that breaks a rule of DESIGN.md's Parts table fails `lint-imports`, the copy as it is passes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import paths as repo_paths

REPO = repo_paths.REPO
LINT = Path(sys.executable).with_name("lint-imports")


def lint(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    return subprocess.run([str(LINT), "--no-logo", "--no-cache", "--config",
                           str(tmp_path / "pyproject.toml")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "app" / "knobtop", tmp_path / "src" / "knobtop",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("journal/events.py", "import knobtop.metrics.counters",
     "journal imports nothing of knobtop but itself"),
    ("server/link.py", "import knobtop.session.port", "hosts, server and load never import"),
    ("analysis/stats.py", "import knobtop.recipes.model", "analysis needs no server"),
    ("load/base.py", "import textual", "Nothing outside ui/ imports textual"),
    ("session/port.py", "import knobtop.headless", "Nothing imports the front ends"),
    ("metrics/board.py", "import knobtop.server.link", "Layers of docs/architecture.md"),
    # type-only imports count too (the session named recipes' types until issue 38)
    ("session/options.py", "if TYPE_CHECKING:\n    import knobtop.recipes.model",
     "Layers of docs/architecture.md"),
    ("ui/look.py", "import knobtop.ui.app", "No import circles among sibling modules"),
])
def test_a_forbidden_import_breaks_its_contract(copy: Path, module: str, line: str,
                                                contract: str) -> None:
    path = copy / "src" / "knobtop" / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    run = lint(copy)
    assert run.returncode == 1, run.stdout + run.stderr
    broken = [row for row in run.stdout.splitlines() if row.endswith(" BROKEN")]
    assert any(row.startswith(contract) for row in broken), run.stdout


def test_the_package_as_it_is_keeps_every_contract(copy: Path) -> None:
    run = lint(copy)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "BROKEN" not in run.stdout and " KEPT" in run.stdout
