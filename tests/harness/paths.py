"""Where the tests find the repository, its parts and their recorded data, wherever in
tests/ (unit/, live/, screens/, faults/) a test module sits."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent  # tests/
REPO = TESTS.parent
APP = REPO / "app"
EXPERIMENTS = REPO / "experiments"
DATA = TESTS / "data"  # recorded journals, sysbench and linkbench output, /proc files


def test_module_source(name: str) -> Path:
    """The file of the test module ``name`` (``test_quit``), in whichever folder it is."""
    found = sorted(TESTS.rglob(f"{name}.py"))
    assert len(found) == 1, f"{name}.py: {found}"
    return found[0]
