"""Save the live screen as SVG with knobtop's own screenshot key (make screenshot).

    .venv/bin/python tools/screenshot.py docs/live-screen.svg

Starts `knobtop lab` on a sandbox of its own (in a temporary folder) in a real tmux pane of
120x36 under sysbench's oltp_read_write, waits until the graphs hold a minute of samples,
presses `S` (the screen saves itself next to its journal), copies that SVG to the path given,
then quits and stops the sandbox.  Uses the test suite's tmux helpers (tests/harness).
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

SAMPLES = 60  # a minute of graphs
SIZE = (120, 36)


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
            tmux.run("send-keys", "-t", pane, "q")
            tmux.exit_status(pane, timeout=60)
        finally:
            tmux.kill()
            subprocess.run([sys.executable, "-m", "knobtop", "lab", "--dir", str(where),
                            "--stop"], check=False, timeout=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
