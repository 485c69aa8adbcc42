"""Issue 36, reproduction 3: named sandboxes live inside their lab's own directory, every
directory knobtop makes for one is 0700 and its own, no file is written through a planted
link, and a sandbox keeps the base options it was made with until someone asks for others."""

from __future__ import annotations

import os
import stat
import subprocess
from functools import partial
from pathlib import Path

import pytest

from harness.binaries import require_binary
from harness.cli import knobtop as run_knobtop
from knobtop.cli.live import recipe_from_args, recipe_options
from knobtop.cli.parser import build_parser
from knobtop.journal import JournalReader, Knobs
from knobtop.lab import LabError, Sandbox
from knobtop.labdirs import lab_dir_for
from knobtop.session.options import LabPlace
from test_targets import BASE

pytestmark = pytest.mark.integration  # the lab's own mariadbd

NOBODY = 65534
SECRET = "the other user's own text\n"

TRX2 = BASE  # a recipe whose second arm runs on the lab target trx2


# A lab starts within 240 s; its errors print whole on one line of 400 columns.
knobtop = partial(run_knobtop, timeout=240, columns=400)


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


def test_a_named_sandbox_keeps_its_options_until_others_are_asked_for(tmp_path: Path) -> None:
    """A recipe's lab target trx2 (innodb_flush_log_at_trx_commit = 2) made with --dir D is
    D/labs/trx2, and `knobtop lab --dir D --name trx2` reopens it on 2; --option replaces
    its options (and says so), which the next plain reopen keeps."""
    require_binary("mariadbd", "mariadb-server")
    lab = tmp_path / "lab"
    recipe = tmp_path / "servers.toml"
    recipe.write_text(TRX2)
    args = build_parser().parse_args(["run", str(recipe), "--lab", "--dir", str(lab)])
    place = dict(recipe_options(args, recipe_from_args(args)).targets)["trx2"].where
    assert isinstance(place, LabPlace) and place.dir == lab / "labs" / "trx2"
    target = Sandbox(place.dir, plugins=place.plugins, options=place.options)
    target.start()  # as a run's target sandbox starts (session/build.py)
    target.stop()
    for made in (lab / "labs", lab / "labs" / "trx2"):
        st = os.lstat(made)
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700, made
        assert st.st_uid == os.geteuid()
    assert not (lab / "my.cnf").exists()  # the lab's own sandbox was never made

    def reopen(*more: str) -> tuple[str | None, str]:
        run = open_named(lab, "trx2", *more)
        assert run.returncode == 0, run.stderr
        journal = journal_of(lab, "trx2", more)
        knobs = next(e for e in JournalReader(journal) if isinstance(e, Knobs))
        journal.unlink()
        return knobs.values["innodb_flush_log_at_trx_commit"], said(run)

    value, text = reopen()
    assert value == "2", text
    assert "base options: innodb_flush_log_at_trx_commit=2" in text
    assert "innodb_flush_log_at_trx_commit=2" in target.config.read_text()
    value, text = reopen("--option", "innodb_flush_log_at_trx_commit=0")
    assert value == "0", text
    assert ("Its base options were innodb_flush_log_at_trx_commit=2: --option replaced "
            "them") in text
    value, text = reopen()
    assert value == "0" and "base options: innodb_flush_log_at_trx_commit=0" in text, text
    assert Sandbox(place.dir).running_pid() is None  # each run stopped what it started
    # --fresh of the lab wipes the lab's own sandbox, never the named ones inside it
    Sandbox(lab).wipe()
    assert "innodb_flush_log_at_trx_commit=0" in target.config.read_text()


def test_a_dir_reached_through_another_users_link_or_directory_is_refused(
        tmp_path: Path) -> None:
    """Found by the issue-36 review: `--dir /shared/evil/lab`, where another user owns the
    link `evil` in a sticky directory, let them repoint it between two uses of the path and
    have the sandbox's server read their my.cnf. The path is resolved once and checked."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # sticky and world-writable, as /tmp
    mine = tmp_path / "mine"
    mine.mkdir()
    link = shared / "evil"
    link.symlink_to(mine)
    relative = os.path.relpath(mine / "lab")
    # a link of one's own, and a relative --dir, are taken as the real, absolute place
    assert lab_dir_for(None, Path(relative)) == (mine / "lab").resolve()
    if os.geteuid() == 0:
        os.lchown(link, NOBODY, NOBODY)
        with pytest.raises(LabError, match=f"{link} is a link owned by nobody"):
            lab_dir_for(None, link / "lab")
        run = knobtop("lab", "--dir", str(link / "lab"), "--headless", "--duration", "1",
                      "--load", "none")
        assert run.returncode != 0 and f"{link} is a link owned by nobody" in said(run)
        assert not (mine / "lab").exists()
        theirs = someone_elses(tmp_path / "theirs")
        with pytest.raises(LabError, match=f"{theirs} belongs to nobody"):
            lab_dir_for("trx2", theirs / "x" / "lab")
    else:
        assert lab_dir_for(None, link / "lab") == (mine / "lab").resolve()
