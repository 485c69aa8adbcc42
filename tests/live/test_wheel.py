"""An installed wheel carries the bundled themes and recipes: built from this checkout,
installed into a fresh virtualenv outside it, and run as a user would (``--version``, a
headless lab session, a bundled recipe by name)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import paths as repo_paths
from harness.binaries import require_binary
from knobtop.journal import JournalReader, Sample
from knobtop.lab import Sandbox

pytestmark = pytest.mark.integration

REPO = repo_paths.REPO


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv whose only knobtop is the wheel; its dependencies come from this
    interpreter's site-packages through a .pth (no download, and the checkout's editable
    install, a .pth in that folder, is not processed from there)."""
    root = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "-w", str(root / "dist"), str(REPO)],
        capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr
    wheel = next((root / "dist").glob("knobtop-*.whl"))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "zz-knobtop-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    unpacked = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site),
         str(wheel)], capture_output=True, text=True, timeout=300, check=False)
    assert unpacked.returncode == 0, unpacked.stderr
    return venv


def run(venv: Path, cwd: Path, *args: str,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(cwd)  # nothing from the real home (config, journals)
    return subprocess.run([str(venv / "bin" / "python"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def lab_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "lab"
    Sandbox(tmp_path / "lab").stop()


def test_the_wheel_runs_outside_the_checkout_with_its_themes_and_recipes(
    installed: Path, tmp_path: Path, lab_dir: Path, sysbench_path: str
) -> None:
    require_binary("mariadbd", "mariadb-server")
    where = run(installed, tmp_path, "-c",
                "import knobtop, knobtop.bundled as b; "
                "print(knobtop.__file__); print(b.bundled_dir('themes')); "
                "print(b.bundled_dir('experiments'))")
    assert where.returncode == 0, where.stderr
    package, themes, recipes = (Path(line) for line in where.stdout.split())
    assert package.is_relative_to(installed) and not package.is_relative_to(REPO)
    assert themes.is_relative_to(installed) and recipes.is_relative_to(installed)
    assert {p.name for p in themes.glob("*.toml")} == {
        p.name for p in (REPO / "themes").glob("*.toml")}
    assert {p.name for p in recipes.glob("*.toml")} == {
        p.name for p in (REPO / "experiments").glob("*.toml")}
    assert {p.name for p in (recipes / "tune").glob("*.toml")} == {  # knobtop tune's searches
        p.name for p in (REPO / "experiments" / "tune").glob("*.toml")} != set()

    version = run(installed, tmp_path, "-m", "knobtop", "--version")
    assert version.returncode == 0 and version.stdout.startswith("knobtop "), version.stderr

    journal = tmp_path / "headless.knobtop.jsonl"
    lab = run(installed, tmp_path, "-m", "knobtop", "lab", "--dir", str(lab_dir),
              "--headless", "--duration", "3", "--load", "none", "--journal", str(journal))
    assert lab.returncode == 0, lab.stdout + lab.stderr
    assert sum(isinstance(e, Sample) for e in JournalReader(journal)) >= 2

    recipe_journal = tmp_path / "recipe.knobtop.jsonl"
    # issue 39: the bundled sort-buffer is seed 002's curve (a probe, no load)
    recipe = run(installed, tmp_path, "-m", "knobtop", "run", "sort-buffer", "--lab",
                 "--dir", str(lab_dir), "--pause", "0", "--journal", str(recipe_journal))
    assert recipe.returncode == 0, recipe.stdout + recipe.stderr
    out = recipe.stdout + recipe.stderr
    assert "Curve sort-buffer" in out
    assert "Sort_merge_passes fell to 0 at sort_buffer_size" in out  # the table's note
    assert sum(isinstance(e, Sample) for e in JournalReader(recipe_journal)) >= 2
