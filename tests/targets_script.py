"""Run by tests/unit/test_targets.py in a process of its own (session_process forks): a recipe
with [targets] through the session's process, as `knobtop run --tui` drives it, without
a screen. Prints one JSON line.

    python targets_script.py RECIPE LAB_DIR JOURNAL run|kill
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

from knobtop.cli.live import recipe_from_args, recipe_options
from knobtop.cli.parser import build_parser
from knobtop.recipes.orders import RecipeOrder
from knobtop.session.process import session_process
from remote_script import Quiet


def main() -> int:
    recipe_path, root, journal, mode = sys.argv[1:5]
    args = build_parser().parse_args(["run", recipe_path, "--lab", "--dir", root, "--journal",
                                      journal, "--tui", "--duration", "3", "--warmup", "1"])
    recipe = recipe_from_args(args)
    out: dict[str, object] = {}
    with session_process(recipe_options(args, recipe), Quiet()) as live:
        remote = live.session
        out["targets"] = list(remote.ready.targets)
        out["roots"] = [str(r) for r in remote.ready.target_roots]
        views = {name: remote.view(name) for name in remote.ready.targets}
        out["target_ports"] = {n: v.state().header.server["port"]  # type: ignore[union-attr]
                               for n, v in views.items()}
        if mode == "kill":
            os.kill(remote.pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
            while remote.lost is None and time.monotonic() < deadline:
                time.sleep(0.05)
            out["lost"] = remote.lost
        else:
            async def run() -> list[str]:
                await remote.open()
                # The run is the session process's (its targets are that process's own
                # sessions), as the live screen asks for it
                report = await remote.run_recipe(RecipeOrder(recipe))
                await remote.close("recipe finished")
                assert report.outcome.outcome == "end", report.outcome
                return [f"{s.arm}@{s.target}" for s in report.results.steps]

            out["steps"] = asyncio.run(run())
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    raise SystemExit(main())
