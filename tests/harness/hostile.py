"""Hostile text for issue 36: terminal control sequences in every kind of string a journal
holds, and the checks that none of them reached an output raw."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

# What a server, a database user or someone else's journal can put in a string: an OSC that
# retitles the pane (BEL- and ST-terminated), OSC 52 (the clipboard), CSI (clear, colour), C1
# CSI and OSC (U+009B, U+009D ... U+009C), BEL, BS, CR, DEL and a bidi override.
OSC_TITLE = "\x1b]2;PWNED\x07"
HOSTILE = (f"A{OSC_TITLE}\x1b]0;PWNED\x1b\\\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b[31mred"
           "\x9b2J\x9d0;PWNED\x9c\x07\x08\r\x7f\u202eZ")
SHOWN = "A\\x1b]2;PWNED\\x07"  # how its start must be shown instead

JOURNAL = Path(__file__).resolve().parent.parent / "data" / "journals" / "lab-80s.knobtop.jsonl"


def _hostile_event(kind: str, t: float, wall: float, **fields: Any) -> dict[str, Any]:
    return {"ev": kind, "t": t, "wall": wall, **fields}


def hostile_journal(path: Path, tag: str = "") -> Path:
    """The recorded lab-80s journal with HOSTILE in every kind of string field: the header's
    profile, server and host text, knob names and values, changes, the phases' workload and
    messages, notes, marks, errors, restarts, an incident (statements, users, log lines,
    problems), a recipe run and its steps (arms), an unknown event type and the end.  Lines
    alternate between orjson (C1 as UTF-8 bytes, controls as \\u00XX) and json.dumps (every
    such character as \\uXXXX)."""
    h = HOSTILE + tag
    lines = [orjson.loads(line) for line in JOURNAL.read_bytes().splitlines() if line]
    header, events = lines[0], lines[1:]
    header["profile"] = "lab" + h
    header["server"]["version_text"] += h
    header["server"]["user"] = h
    header["hosts"]["local"]["hostname"] = h
    extra: list[dict[str, Any]] = []
    for event in events:
        kind = event["ev"]
        if kind == "knobs":
            event["values"]["evil" + h] = h
            event["values"]["innodb_io_capacity"] = "200"
        elif kind == "phase":
            event["workload"] = "oltp_read_write" + h
            event["message"] = h
        elif kind == "change" and event["knob"] == "innodb_io_capacity":
            event["message"] = h
            event["warnings"] = [h]
            t, wall = event["t"], event["wall"]
            extra += [
                _hostile_event("note", t + 0.1, wall + 0.1, text=h),
                _hostile_event("mark", t + 0.2, wall + 0.2, label=h),
                _hostile_event("error", t + 0.3, wall + 0.3, source=h, message=h),
                _hostile_event("change", t + 0.4, wall + 0.4, knob="evil" + h, requested=h,
                               old=h, new=h, method="set_global", result="refused",
                               message=h, warnings=[h], duration=0.01,
                               side_effects={"x" + h: [h, h]}, reason=h),
                _hostile_event("restart", t + 0.5, wall + 0.5, node=h, step="restart",
                               result="failed", seconds=1.0, message=h),
                _hostile_event("incident", t + 0.6, wall + 0.6, threads=2,
                               procs=[[7, h, h, "Query", 12.0, h, f"SELECT SLEEP(30), '{h}'"]],
                               locks=[[7, 3.0, h, 8, h]],
                               oldest={"thread": 7, "seconds": 12.0, "state": h,
                                       "statement": h},
                               repl=[{"name": h, "io": "Yes", "sql": "No", "lag": None,
                                      "state": h, "error": h}],
                               galera={"wsrep_cluster_status": h},
                               log=[f"2025-01-01 [Warning] Access denied for user '{h}'"
                                    "@'localhost' (using password: YES)", h],
                               log_path="/var/log/" + h, problems=[h]),
                _hostile_event(h, t + 0.7, wall + 0.7, data=h),
            ]
        elif kind == "end":
            event["reason"] = h
    # A recipe's run and two measured steps (arms named by someone else's recipe file).
    recipe, first, last = "recipe" + HOSTILE, events[0], events[-1]  # one recipe in all
    extra.append(_hostile_event("recipe", first["t"], first["wall"], action="start",
                                name=recipe, plan={"arms": [h, "b" + h], "path": h},
                                message=h))
    for n, arm in enumerate((h, "b" + h)):
        extra.append(_hostile_event(
            "step", last["t"] - 2 + n, last["wall"] - 2 + n, recipe=recipe, index=n,
            replicate=0, arm=arm, threads=4, start=10.0 + 30 * n, end=30.0 + 30 * n,
            tps=1000.0 + n, p95=5.0, intervals=20, waits={h: 1.0}, disk=h,
            ops={h: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}, ndb_hit={h: 99.0}))
    extra.append(_hostile_event("recipe", last["t"] - 0.1, last["wall"] - 0.1, action="end",
                                name=recipe, message=h))
    events = sorted([*events, *extra], key=lambda e: e["t"])
    out = [orjson.dumps(header)]
    for n, event in enumerate(events):
        out.append(orjson.dumps(event) if n % 2 else json.dumps(event).encode())
    path.write_bytes(b"\n".join(out) + b"\n")
    return path


def raw_controls(data: bytes) -> list[str]:
    """Every control character in ``data`` (UTF-8) that must never reach a terminal: ESC,
    the other C0 controls but newline and tab, DEL, C1 (U+0080-U+009F), and other
    unprintable characters (bidi overrides); each with a little context."""
    text = data.decode("utf-8", errors="replace")
    return [repr(text[max(0, i - 20):i + 20]) for i, c in enumerate(text)
            if c not in "\n\t" and not c.isprintable()]
