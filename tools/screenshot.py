"""Save the live screen as SVG with knobtop's own screenshot key (make screenshot).

    .venv/bin/python tools/screenshot.py docs/live-screen.svg

Starts `knobtop lab` on a sandbox of its own (in a temporary folder) in a real tmux pane of
160x44 under sysbench's oltp_read_write, waits for 40 samples, sets innodb_io_capacity to
1000 from the knob panel (the keys the README's tour names), writes a note 25 s later,
waits until the graphs hold 80 samples, presses `S` (the screen saves itself next to its
journal), copies that SVG to the path given, then undoes the change, quits and stops the
sandbox.  Uses the test suite's tmux helpers (tests/harness).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "app"))

from harness.tmux import open_lab, pane_server, samples_shown  # noqa: E402

BEFORE = 40  # samples before the change
SAMPLES = 80  # in all, when the picture is taken
NOTE_AFTER = 25  # samples between the change and the note (each tag whole on the graphs)
NOTE = "io_capacity 1000: does flushing even out?"
IO_CAPACITY_ROW = 4  # innodb_io_capacity's row in the knob panel, from the first
SIZE = (160, 44)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: tools/screenshot.py OUT.svg", file=sys.stderr)
        return 2
    out = Path(argv[0])
    with tempfile.TemporaryDirectory(prefix="knobtop-shot-") as tmp:
        work = Path(tmp)
        where = work / "lab"
        journal = work / "screen.knobtop.jsonl"
        tmux = pane_server(work)
        try:
            pane = open_lab(tmux, where, journal, work, "--load", "oltp_read_write",
                            size=SIZE)
            tmux.wait_for(pane, lambda s: (samples_shown(s) or 0) >= BEFORE,
                          timeout=BEFORE * 3, what=f"{BEFORE} samples")
            tmux.run("send-keys", "-t", pane, *["Down"] * IO_CAPACITY_ROW, "Enter",
                     "1000", "Enter")
            tmux.wait_for(pane, lambda s: "1000 (was 200)" in "\n".join(s), timeout=30,
                          what="the change in the journal pane")
            tmux.wait_for(pane, lambda s: (samples_shown(s) or 0) >= BEFORE + NOTE_AFTER,
                          timeout=NOTE_AFTER * 3, what="the note's moment")
            tmux.run("send-keys", "-t", pane, "n")
            tmux.run("send-keys", "-t", pane, "-l", NOTE)
            tmux.run("send-keys", "-t", pane, "Enter")
            tmux.wait_for(pane, lambda s: NOTE[:20] in "\n".join(s), timeout=30,
                          what="the note in the journal pane")
            tmux.wait_for(pane, lambda s: (samples_shown(s) or 0) >= SAMPLES,
                          timeout=SAMPLES * 3, what=f"{SAMPLES} samples")
            tmux.run("send-keys", "-t", pane, "S")
            deadline = time.monotonic() + 30
            shots: list[Path] = []
            while not shots and time.monotonic() < deadline:
                shots = sorted(work.glob("*.svg"))
                time.sleep(0.2)
            if not shots:
                print("no SVG appeared next to the journal within 30 s", file=sys.stderr)
                return 1
            size = -1
            while shots[0].stat().st_size != size:  # written whole
                size = shots[0].stat().st_size
                time.sleep(0.5)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shots[0], out)
            print(f"wrote {out} ({size} bytes)")
            tmux.run("send-keys", "-t", pane, "u")
            tmux.wait_for(pane, lambda s: "200 (was 1000)" in "\n".join(s), timeout=30,
                          what="the undo in the journal pane")
            tmux.run("send-keys", "-t", pane, "q")
            tmux.exit_status(pane, timeout=60)
        finally:
            tmux.kill()
            subprocess.run([sys.executable, "-m", "knobtop", "lab", "--dir", str(where),
                            "--stop"], check=False, timeout=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
