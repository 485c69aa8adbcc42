"""The streaming fold from a journal's events to a JournalData (analysis.journalrows): knob
values at the range's start and end, changes, restarts, notes, marks, errors, recipe events,
load phases, and one row of derived metrics per sample (rates derived from the raw counters
exactly as the live screen derives them).  analysis.journaldata feeds it."""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

from knobtop.analysis.journalrows import JournalData, KnobValues, LoadPoint, PhaseSpan, Row
from knobtop.analysis.reportcache import Kept
from knobtop.journal import (
    Change,
    Checkpoint,
    End,
    Error,
    Event,
    Header,
    Knobs,
    Load,
    Mark,
    Note,
    OutsideChange,
    Phase,
    RecipeRun,
    Restart,
    Sample,
    StepResult,
    Trial,
    Unknown,
)
from knobtop.journal.events import JsonDict, target_of

if TYPE_CHECKING:
    from knobtop.metrics.derive import BriefDeriver, Snapshot


#: What the deriver's step raises on a malformed sample (derive then says what is wrong).
_MALFORMED = (TypeError, ValueError, IndexError, KeyError, AttributeError, ArithmeticError)


def _apply_change(knobs: KnobValues, change: Change) -> None:
    if change.result != "ok":
        return
    knobs[change.knob] = change.new
    for knob, values in change.side_effects.items():
        if isinstance(values, list | tuple) and len(values) == 2:
            knobs[knob] = values[1]


@dataclass
class _OpenPhase:
    event: Phase
    hosts: int


class _Loader:
    """The streaming fold from events to a JournalData."""

    def __init__(self, data: JournalData) -> None:
        self.data = data
        self.t_from = data.t_from
        self.t_to = data.t_to
        self.keep: Kept | None = None  # filled for the report cache as the journal is read
        self.prev_raw: tuple[float, list[int | float | None], dict[str, list[float]],
                             bool] | None = None
        self.pending_load: LoadPoint | None = None
        self.open_phase: _OpenPhase | None = None
        self.spans: list[PhaseSpan] = []
        self.baseline_seen = False
        self.unknown: Counter[str] = Counter()
        self.last_seen = 0.0

    @cached_property
    def deriver(self) -> BriefDeriver:
        """The samples' deriver, made at the first sample: a report read from a kept fold
        derives none, and leaves knobtop.metrics unimported (issue 41)."""
        from knobtop.metrics.derive import BriefDeriver

        return BriefDeriver(self.data.header.counters, self.data.header.host_fields)

    def feed_sample(self, d: JsonDict) -> bool:
        """``feed`` of a sample line's checked JSON object (JournalReader.quick): the
        same fold without building the Sample; False for a further server's sample (not
        folded)."""
        if self._other_target(d):
            return False
        t = d["t"]
        self._raw_sample(t, d["wall"], d["v"], d.get("host") or {}, d.get("re", False),
                         self._seen(t))
        return True

    def go_on_from(self, d: JsonDict) -> None:
        """The fold's state after the sample ``d`` (a kept fold's last): the deriver and the
        previous sample as folding it left them, nothing added (its row is kept)."""
        t, v, host, re = d["t"], d["v"], d.get("host") or {}, d.get("re", False)
        self.prev_raw = (t, v, host, re)
        with contextlib.suppress(*_MALFORMED):  # (the row it made was kept: derive said why)
            self.deriver.step(t, v, host, re)

    def feed_load(self, d: JsonDict) -> None:
        """``feed`` of a load line's checked JSON object, without building the Load."""
        if not self._other_target(d):
            t = d["t"]
            self._raw_load(t, d["src"], d["tps"], d["lat"], self._seen(t))

    def _other_target(self, d: JsonDict) -> bool:
        """A sample or load report of a recipe's further server: counted, not folded."""
        if not d.get("target"):
            return False
        self.data.other_targets += 1
        if self.keep is not None:
            self.keep.other_targets += 1
        return True

    def _seen_all(self, times: list[float]) -> None:
        """_seen of each of ``times`` in turn: max() and min() keep the first of equals,
        as _seen's strict comparisons do."""
        if not times:
            return
        top = max(times)
        if top > self.last_seen:
            self.last_seen = top
        if self.t_from is not None or self.t_to is not None:
            lo, hi = self.t_from, self.t_to
            times = [t for t in times if (lo is None or t >= lo) and (hi is None or t < hi)]
            if not times:
                return
        data = self.data
        first, last = min(times), max(times)
        if data.first_t is None or first < data.first_t:
            data.first_t = first
        if data.last_t is None or last > data.last_t:
            data.last_t = last

    def _seen(self, t: float) -> bool:
        """What ``feed`` does with every event's time (min and max as the comparisons they
        make); whether it lies inside the range."""
        if t > self.last_seen:
            self.last_seen = t
        if (self.t_from is not None and not t >= self.t_from) or (
                self.t_to is not None and not t < self.t_to):
            return False
        data = self.data
        if data.first_t is None or t < data.first_t:
            data.first_t = t
        if data.last_t is None or t > data.last_t:
            data.last_t = t
        return True

    def feed(self, event: Event) -> None:
        data = self.data
        target = target_of(event)
        if target and not isinstance(event, StepResult):
            # A recipe's further server (issue 19): its steps are the recipe's; its samples,
            # loads, phases and knobs are not this journal's own server's series (its first
            # knob snapshot is kept for the report's comparison of the servers).
            data.other_targets += 1
            if isinstance(event, Knobs):
                data.target_knobs.setdefault(target, dict(event.values))
            return
        inside = self._seen(event.t)
        if isinstance(event, Sample):
            self._sample(event, inside)
        elif isinstance(event, Load):
            self._load(event, inside)
        elif isinstance(event, Phase):
            self._phase(event)
        elif isinstance(event, Knobs):
            self._knobs(event)
        elif isinstance(event, Change):
            if self.t_from is not None and event.t < self.t_from:
                _apply_change(data.knobs_start, event)
            if self.t_to is None or event.t < self.t_to:
                _apply_change(data.knobs_end, event)
            if inside:
                data.changes.append(event)
        elif isinstance(event, OutsideChange):
            if self.t_from is not None and event.t < self.t_from:
                data.knobs_start[event.knob] = event.new
            if self.t_to is None or event.t < self.t_to:
                data.knobs_end[event.knob] = event.new
            if inside:
                data.outside.append(event)
        elif isinstance(event, RecipeRun | StepResult | Checkpoint | Trial):
            if inside:
                data.recipe_events.append(event)
        elif isinstance(event, Unknown):
            data.skipped_unknown += 1
            self.unknown[event.type] += 1
        elif not inside:
            return
        elif isinstance(event, Restart):
            data.restarts.append(event)
        elif isinstance(event, Note):
            data.notes.append(event)
        elif isinstance(event, Mark):
            data.marks.append(event)
        elif isinstance(event, Error):
            data.errors.append(event)
        elif isinstance(event, End):
            data.end = event

    def _sample(self, event: Sample, inside: bool) -> None:
        self._raw_sample(event.t, event.wall, event.v, event.host, event.re, inside)

    def _raw_sample(self, t: float, wall: float, v: list[int | float | None],
                    host: dict[str, list[float]], re: bool, inside: bool) -> None:
        prev, self.prev_raw = self.prev_raw, (t, v, host, re)
        deriver = self.deriver
        try:
            tps, qps, hit, dirty, history, age, cpu, running = deriver.step(t, v, host, re)
        except _MALFORMED:
            # A malformed sample: derive itself says what is wrong (or, if it finds
            # nothing, its values stand).
            from knobtop.metrics.derive import BRIEF_ROW, derive

            values = derive(None if prev is None else _snapshot(self.data.header, *prev),
                            _snapshot(self.data.header, t, v, host, re),
                            self.data.header.host_fields, brief=True)
            tps, qps, hit, dirty, history, age, cpu, running = (
                values.get(k) for k in BRIEF_ROW)
        load, self.pending_load = self.pending_load, None
        if not inside:
            return
        self.data.rows.append(Row(t, wall, tps, qps, hit, dirty, history, age, cpu,
                                  load.tps if load else None, load.p95 if load else None,
                                  running))

    def _load(self, event: Load, inside: bool) -> None:
        self._raw_load(event.t, event.src, event.tps, event.lat, inside)

    def _raw_load(self, t: float, src: str, tps: float, lat: float, inside: bool) -> None:
        hosts = self.open_phase.hosts if self.open_phase else 1
        if hosts > 1 and src != "all":
            if self.keep is not None:
                self.keep.dropped.append(t)
            return  # several clients: their per-second sum ("all") is the phase's number
        point = LoadPoint(t, float(tps), float(lat))
        self.pending_load = point
        if inside:
            self.data.loads.append(point)

    def _phase(self, event: Phase) -> None:
        if self.open_phase is not None:
            ended_by = "next start" if event.action == "start" else event.action
            self._close(event.t, ended_by, event.message if event.action != "start" else "")
        if event.action == "start":
            self.open_phase = _OpenPhase(event, len(event.host.split(",")))
        self.pending_load = None

    def _close(self, t: float, ended_by: str, message: str) -> None:
        assert self.open_phase is not None
        start = self.open_phase.event
        self.spans.append(
            PhaseSpan(
                number=start.phase,
                workload=start.workload,
                threads=start.threads,
                driver=start.driver,
                host=start.host,
                start=start.t,
                end=t,
                ended_by=ended_by,
                message=message or start.message,
            )
        )
        self.open_phase = None

    def _knobs(self, event: Knobs) -> None:
        data = self.data
        first = not self.baseline_seen
        self.baseline_seen = True
        if first or (self.t_from is not None and event.t < self.t_from):
            data.knobs_start.update(event.values)
        if first or self.t_to is None or event.t < self.t_to:
            data.knobs_end.update(event.values)

    def finish(self) -> None:
        data = self.data
        if self.open_phase is not None:
            self._close(self.last_seen, "end of journal", "")
        lo = self.t_from if self.t_from is not None else float("-inf")
        hi = self.t_to if self.t_to is not None else float("inf")
        for span in self.spans:
            start, end = max(span.start, lo), min(span.end, hi)
            if end < start or (end == start and span.end > span.start):
                continue  # the phase lies outside the range
            ended_by = span.ended_by
            if end < span.end:
                ended_by = "end of range"
            data.phases.append(replace(span, start=start, end=end, ended_by=ended_by))
        data.unknown_types = dict(self.unknown)


def _snapshot(header: Header, t: float, v: list[int | float | None],
              host: dict[str, list[float]], re: bool) -> Snapshot:
    from knobtop.metrics.derive import Snapshot

    return Snapshot.from_values(t, header.counters, v, host, reconnect=re)
