"""Where knobtop reaches into Textual's internals, and the Textual they were made against.

Five modules of ``ui/`` replace or copy a private part of Textual, each for a measured
reason (its own docstring says which). None has a public API to use instead in Textual
8.2: each would need a change upstream, whose text is in :attr:`Patch.upstream` (and in
the README's Known issues). Until then Textual is pinned to :data:`TEXTUAL_VERSION`
(``pyproject.toml`` and ``constraints.txt``), and ``tests/unit/test_textual_patches.py`` fails,
naming the module to revisit, when the installed Textual is another version or when the
source of anything a patch was made from has changed: carry the change over, then record
the new digest (``python -m knobtop.ui.patches`` prints them).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
from dataclasses import dataclass

#: The Textual release every patch below was made from and checked against.
TEXTUAL_VERSION = "8.2.8"


@dataclass(frozen=True)
class Patch:
    """One reach into Textual: knobtop's module; the Textual objects it replaces or copies
    (dotted names; Textual's own object where the patch keeps it aside); the digest of
    their source at :data:`TEXTUAL_VERSION`; the change upstream that would let knobtop
    drop it."""

    module: str
    made_from: tuple[str, ...]
    digest: str
    upstream: str


PATCHES: tuple[Patch, ...] = (
    Patch(
        "knobtop.ui.dirtyrender",
        ("textual._compositor.Compositor.render_partial_update",
         "textual._compositor.Compositor._render_chops",
         "textual._compositor.Compositor._regions_to_spans"),
        "bcadacfef341fdb0",
        "Compositor.render_partial_update renders every widget under the crop that surrounds "
        "all dirty regions and cuts all of its lines; rendering only the widgets and lines "
        "that a dirty region overlaps writes the same spans at a fraction of the cost "
        "(about 45% of an idle 160x48 screen's CPU).",
    ),
    Patch(
        "knobtop.ui.keynames",
        ("textual.keys.key_to_character", "textual.keys.format_key"),
        "983740d761e0af46",
        "key_to_character and format_key call unicodedata.lookup for every binding on "
        "every frame's footer and key check, which maps Unicode's name tables (0.9 MB of "
        "a small app's memory); a table of the common key names would avoid the lookup.",
    ),
    Patch(
        "knobtop.ui.leanstrips",
        ("knobtop.ui.leanstrips.TEXTUALS_STRIP_INIT", "textual.cache.FIFOCache"),
        "dd191b9ab4bc7bf7",
        "Strip.__init__ makes seven FIFOCache objects up front, about 0.9 KB a strip before "
        "anything is cached, and most stay empty; making each cache on first use saves "
        "1.5-2.5 MB on a 160x48 screen.",
    ),
    Patch(
        "knobtop.ui.quietinput",
        ("textual.drivers.linux_driver.LinuxDriver.run_input_thread",),
        "d796af6d69db337d",
        "LinuxDriver.run_input_thread polls with a 0.1 s select timeout to time out a lone "
        "Escape and to notice exit; waiting on a pipe the exit event writes to, with a "
        "timeout only while an Escape is pending, removes 10 wake-ups a second.",
    ),
    Patch(
        "knobtop.ui.webwrite",
        ("textual.drivers.web_driver.WebDriver.__init__",
         "textual.drivers.web_driver.WebDriver.write"),
        "61a0c59e5eef394e",
        "WebDriver frames each packet with a single os.write from two threads without a "
        "lock; a packet larger than the pipe's atomic size can be split, interleaved or "
        "cut short on a full non-blocking pipe, which breaks textual-serve's framing "
        "(a screenshot download ended mid-SVG).",
    ),
)


def resolve(dotted: str) -> object:
    """The object a dotted name names: the longest importable module prefix, then
    attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            thing: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            thing = getattr(thing, name)
        return thing
    raise ModuleNotFoundError(dotted)


def source_digest(names: tuple[str, ...]) -> str:
    """sha256 (first 16 hex digits) of the named objects' source, in order."""
    sha = hashlib.sha256()
    for name in names:
        target = resolve(name)
        sha.update(inspect.getsource(target).encode())  # type: ignore[arg-type]
    return sha.hexdigest()[:16]


def main() -> None:
    """Print each patch's digest as the installed Textual reads now."""
    import textual

    print(f"textual {textual.__version__} (patches made against {TEXTUAL_VERSION})")
    for patch in PATCHES:
        now = source_digest(patch.made_from)
        state = "same" if now == patch.digest else f"CHANGED (recorded {patch.digest})"
        print(f"{patch.module}: {now} {state}")


if __name__ == "__main__":
    main()
