"""Issue 36, reproduction 3: named sandboxes live inside their lab's own directory, every
directory knobtop makes for one is 0700 and its own, and no file is written through a
planted link."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.binaries import require_binary
from knobtop.lab import LabError, Sandbox
from knobtop.labdirs import lab_dir_for

pytestmark = pytest.mark.integration  # the lab's own mariadbd

NOBODY = 65534
SECRET = "the other user's own text\n"


def knobtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "knobtop", *args], capture_output=True,
                          text=True, timeout=240, check=False,
                          env={**os.environ, "COLUMNS": "400"})


def said(run: subprocess.CompletedProcess[str]) -> str:
    return " ".join(run.stderr.split())


def journal_of(lab: Path, name: str, more: tuple[str, ...]) -> Path:
    return lab.parent / f"{lab.name}-{name}-{len(more)}.knobtop.jsonl"


def open_named(lab: Path, name: str, *more: str) -> subprocess.CompletedProcess[str]:
    """`knobtop lab --dir LAB --name NAME` for a second, headless, without load."""
    return knobtop("lab", "--dir", str(lab), "--name", name, "--headless", "--duration", "1",
                   "--load", "none", "--journal", str(journal_of(lab, name, more)), *more)


def someone_elses(path: Path) -> Path:
    path.mkdir(parents=True)
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    return path


def test_a_planted_link_or_directory_at_a_named_sandboxs_place_is_not_followed(
    tmp_path: Path,
) -> None:
    require_binary("mariadbd", "mariadb-server")
    theirs = someone_elses(tmp_path / "theirs")
    lab = tmp_path / "lab"
    (lab / "labs").mkdir(parents=True)
    # labs/NAME: a link to another user's directory
    (lab / "labs" / "trx2").symlink_to(theirs)
    run = open_named(lab, "trx2")
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert f"{lab / 'labs' / 'trx2'} is a symbolic link" in said(run)
    assert os.listdir(theirs) == []  # nothing written through it
    # labs/ itself a link to it
    other = tmp_path / "other"
    other.mkdir()
    (other / "labs").symlink_to(theirs)
    run = open_named(other, "trx2")
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert f"{other / 'labs'} is a symbolic link" in said(run)
    assert os.listdir(theirs) == []
    # --fresh on a lab that is a link to it deletes nothing there
    (theirs / "keep").write_text(SECRET)
    (tmp_path / "linked").symlink_to(theirs)
    with pytest.raises(LabError, match="is a symbolic link"):
        Sandbox(tmp_path / "linked").wipe()
    assert (theirs / "keep").read_text() == SECRET
    (theirs / "keep").unlink()
    if os.geteuid() == 0:  # labs/NAME: a real directory that is another user's
        os.rmdir(theirs)
        mine = tmp_path / "mine"
        someone_elses(mine / "labs" / "trx3")
        run = open_named(mine, "trx3")
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        assert f"{mine / 'labs' / 'trx3'} belongs to nobody (uid {NOBODY})" in said(run)
        assert os.listdir(mine / "labs" / "trx3") == []


@pytest.mark.parametrize("name", ["my.cnf", "client.cnf", "error.log", "port", "mysqld.pid"])
def test_a_planted_link_to_a_file_outside_is_never_written_through(tmp_path: Path,
                                                                   name: str) -> None:
    require_binary("mariadbd", "mariadb-server")
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    root = lab_dir_for("trx2", tmp_path / "lab")
    root.mkdir(parents=True)
    (root / name).symlink_to(outside)
    with pytest.raises(LabError) as refused:
        Sandbox(root, options=(("innodb_flush_log_at_trx_commit", "2"),)).start()
    assert f"{root / name} is a symbolic link" in str(refused.value)
    assert outside.read_text() == SECRET
    assert (root / name).is_symlink()  # left for the person to look at
    assert Sandbox(root).running_pid() is None
