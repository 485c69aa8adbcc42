"""Files another local user planted in the directory knobtop is started from are never run
(issue 36, found in review): sysbench looks there first for its Lua scripts and test name,
`python -c` and `python -m` put it first on the import path. knobtop's children start in a
private directory of their own, its Python children with -P."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.binaries import require_binary
from knobtop.journal import Change, JournalReader, Phase
from knobtop.lab import Sandbox

pytestmark = pytest.mark.integration


def plant(where: Path, marker: Path) -> None:
    """Code that leaves ``marker`` behind if anything runs it."""
    lua = f'local f = io.open("{marker}", "a"); f:write("lua\\n"); f:close()\n'
    for name in ("oltp_common.lua", "oltp_point_select.lua", "oltp_point_select"):
        (where / name).write_text(lua)
    py = f'open("{marker}", "a").write(__name__ + "\\n")\n'
    for name in ("statistics.py", "asyncio.py", "orjson.py"):
        (where / name).write_text(py)
    (where / "knobtop").mkdir()
    (where / "knobtop" / "__init__.py").write_text(py)


@pytest.mark.parametrize("driver", ["sysbench", "builtin"])
def test_nothing_planted_where_knobtop_starts_is_run(tmp_path: Path, driver: str) -> None:
    if driver == "sysbench":
        require_binary("sysbench", "sysbench")
    planted = tmp_path / "planted"
    planted.mkdir()
    marker = tmp_path / "ran-planted-code"
    plant(planted, marker)
    lab = tmp_path / "lab"
    journal = tmp_path / "j.knobtop.jsonl"
    script = Path(sys.executable).parent / "knobtop"  # the console script, as users run it
    try:
        run = subprocess.run(
            [str(script), "lab", "--dir", str(lab), "--headless", "--duration", "4",
             "--journal", str(journal), "--load", "oltp_point_select", "--threads", "1",
             "--table-size", "200", "--driver", driver, "--set", "back_log=120@1"],
            cwd=planted, capture_output=True, text=True, timeout=300, check=False)
    finally:
        Sandbox(lab).stop()
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    events = list(JournalReader(journal))
    # the load ran, and the static change restarted the server with the lab's command
    assert any(isinstance(e, Phase) and e.action == "start" for e in events)
    assert next((e.knob, e.new, e.result) for e in events if isinstance(e, Change)) == \
        ("back_log", "120", "ok")
    assert not marker.exists(), marker.read_text()


def test_the_private_directory_is_this_users_alone() -> None:
    import os
    import stat

    from knobtop.safefile import private_cwd

    st = os.lstat(private_cwd())
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
    assert stat.S_IMODE(st.st_mode) == 0o700
