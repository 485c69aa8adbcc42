"""KnobProvider: find any server variable from the command palette and open its editor."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from knobtop.server.catalog import DATADIR_BOUND, Catalog, CatalogFacts, match_offsets
from knobtop.server.knobtext import show_bound, show_value

_HUGE = float(1 << 62)  # ranges above this read as "no upper limit"
_MODE_WORDS = {
    "dynamic": "dynamic (SET GLOBAL)",
    "static": "static (config + restart)",
    "absent": "absent",
    "unknown": "dynamic? (unknown: SET GLOBAL will tell)",
}


def describe(facts: CatalogFacts) -> str:
    """One line of plain text: value, default, range or choices, mode, note."""
    parts: list[str] = []
    if facts.present:
        parts.append(f"now {show_value(facts.name, facts.value) if facts.value else '?'}")
        if facts.default is not None:
            parts.append(f"default {show_value(facts.name, str(facts.default))}")
        if facts.choices:
            parts.append("one of " + "/".join(facts.choices))
        elif facts.minimum is not None or facts.maximum is not None:
            lo, hi = facts.minimum, facts.maximum
            if hi is None or hi >= _HUGE:
                parts.append(f"≥ {show_bound(lo)}" if lo is not None else "")
            else:
                parts.append(f"{show_bound(lo) if lo is not None else '?'} to {show_bound(hi)}")
    mode = _MODE_WORDS.get(facts.mode, facts.mode)
    if facts.ignored:
        mode += ", ignored by this server"
    if facts.name.lower() in DATADIR_BOUND:
        mode += ", fixed by the existing datadir"
    parts.append(mode)
    text = " · ".join(p for p in parts if p)
    return f"{text} — {facts.note}" if facts.note else text


class KnobProvider(Provider):
    """Searches ``app.knob_catalog``; choosing a hit calls ``app.edit_knob(name)``."""

    def _catalog(self) -> Catalog | None:
        catalog = getattr(self.app, "knob_catalog", None)
        return catalog if isinstance(catalog, Catalog) else None

    def _edit(self, name: str) -> None:
        edit = getattr(self.app, "edit_knob", None)
        if callable(edit):
            edit(name)

    def _display(self, name: str, query: str) -> Content:
        matcher = self.matcher(query.strip().replace(" ", "_"))
        if matcher.query.lower() in name.lower():
            return matcher.highlight(name)  # textual's fuzzy matcher: a plain substring
        content = Content(name)
        for offset in match_offsets(name, query):
            content = content.stylize(matcher.match_style, offset, offset + 1)
        return content

    async def search(self, query: str) -> Hits:
        catalog = self._catalog()
        if catalog is None:
            return
        for score, facts in catalog.scored(query, limit=40):
            yield Hit(
                score,
                self._display(facts.name, query),
                partial(self._edit, facts.name),
                text=facts.name,
                help=escape(describe(facts)),
            )

    async def discover(self) -> Hits:
        catalog = self._catalog()
        if catalog is None:
            return
        for facts in catalog.seed():
            yield DiscoveryHit(
                Content(facts.name),
                partial(self._edit, facts.name),
                text=facts.name,
                help=escape(describe(facts)),
            )
