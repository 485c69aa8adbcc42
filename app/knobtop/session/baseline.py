"""The session's baseline in words: what reverting to it does and what quit did, for
knobtop's own changes and for the values changed outside knobtop (kept unless chosen)."""

from __future__ import annotations

from knobtop.session.port import BaselineDiff

#: What quit may do with the knobs that differ from the baseline.
QUIT_CHOICES = ("revert", "revert_all", "keep")


def previous_baseline_note(name: str, before: dict[str, str | None],
                           baseline: dict[str, str | None]) -> str:
    """The knobs whose value at this start is not what the previous session (journal
    ``name``) started from: changes it left behind, or made by someone else since; ""
    when none differs."""
    differ = [f"{k} = {baseline[k]} (it started from {v})"
              for k, v in sorted(before.items())
              if k in baseline and baseline[k] != v]
    if not differ:
        return ""
    return (f"the server differs from the baseline of the previous session ({name}): "
            f"{'; '.join(differ)}. This session's baseline is the server as it is now")


def revert_plan(diff: list[BaselineDiff], restart_plan: str) -> str:
    """What reverting ``diff`` does: which knobs go back live, which need the restart
    (``restart_plan``: what it does; a restart is promised only when a static knob of
    knobtop's differs), and which were changed outside knobtop (left as they are unless
    the person chooses to revert them too)."""
    ours = [d for d in diff if not d.outside]
    live = [d.knob for d in ours if d.dynamic]
    static = [d.knob for d in ours if not d.dynamic]
    theirs = [d for d in diff if d.outside]
    parts = []
    if live:
        parts.append(f"Back live with SET GLOBAL, no restart: {', '.join(live)}.")
    if static:
        parts.append(f"Static, back together with one restart: {', '.join(static)}; "
                     f"knobtop {restart_plan}.")
    elif ours or not theirs:
        parts.append("Nothing restarts.")
    else:
        parts.append("None of knobtop's own changes differs.")
    if theirs:
        restart = [d.knob for d in theirs if not d.dynamic]
        parts.append(
            f"Changed outside knobtop, left as {'it is' if len(theirs) == 1 else 'they are'} "
            f"unless you choose otherwise: {', '.join(d.knob for d in theirs)}"
            + (f" (back only with a restart: {', '.join(restart)})." if restart else "."))
    return " ".join(parts)


def _listed(items: list[BaselineDiff]) -> str:
    return ", ".join(f"{d.knob}={d.now} (baseline {d.baseline}"
                     + (", changed outside knobtop)" if d.outside else ")") for d in items)


def quit_text(choice: str, diff: list[BaselineDiff]) -> str:
    """The journal's note of what quit did with ``diff``: ``revert`` (knobtop's changes;
    those made outside it stay on the server), ``revert_all`` or ``keep``."""
    verb = {"revert": "reverted to the baseline", "revert_all": "reverted to the baseline",
            "keep": "kept on the server"}[choice]
    if not diff:
        return f"quit: {verb}: nothing differed"
    if choice != "revert" or not any(d.outside for d in diff):
        return f"quit: {verb}: {_listed(diff)}"
    ours = [d for d in diff if not d.outside]
    kept = f"kept on the server: {_listed([d for d in diff if d.outside])}"
    return f"quit: {verb}: {_listed(ours)}; {kept}" if ours else f"quit: {kept}"


__all__ = ["QUIT_CHOICES", "quit_text", "revert_plan"]

