"""PhaseNumbers: a phase's per-second TPS and latency, kept for its summary, 8 bytes a report.

Fed recorded sysbench interval lines (two decimals, as sysbench prints them). The summary must
be what the parsed floats give, and a day-long phase must hold about half of what two float
arrays held (issue 16 row 5a).
"""

from __future__ import annotations

import statistics

import pytest

from harness import paths as repo_paths
from knobtop.load.sysbench_output import IntervalReport, parse_interval
from knobtop.session.loadctl import Hundredths, PhaseNumbers, phase_stats

DATA = repo_paths.DATA / "sysbench"


def recorded() -> list[IntervalReport]:
    reports = [r for name in ("oltp_point_select.8.txt", "oltp_read_write.8.txt")
               for line in (DATA / name).read_text().splitlines()
               if (r := parse_interval(line)) is not None]
    assert len(reports) >= 30
    return reports


def test_the_summary_is_what_the_recorded_floats_give() -> None:
    reports = recorded()
    numbers = PhaseNumbers()
    for report in reports:
        numbers.append(report)
    tps = [r.tps for r in reports]
    lat = [r.latency_ms for r in reports]
    assert numbers.tps.values() == tps  # every value back exactly, in order
    assert numbers.lat.values() == lat
    assert phase_stats(numbers) == {
        "intervals": len(reports),
        "tps_median": round(statistics.median(tps), 2),
        "tps_mean": round(statistics.fmean(tps), 2),
        "p95_median": round(statistics.median(lat), 2),
    }


def test_a_day_long_phase_holds_eight_bytes_a_report() -> None:
    reports = recorded()
    numbers = PhaseNumbers()
    for i in range(86_400):
        numbers.append(reports[i % len(reports)])
    per_report = (numbers.tps.nbytes() + numbers.lat.nbytes()) / len(numbers)
    assert per_report < 9.5  # two float arrays held 16 (and a bit of over-allocation)


# 12345.675: a third decimal on a large figure (a tolerance relative to the value let it
# through as 12345.68).
@pytest.mark.parametrize("odd", [1234.567, 12345.675, 2.0**31 / 100 + 1, -2.0**31 / 100 - 1])
def test_a_value_hundredths_cannot_hold_turns_the_column_to_floats(odd: float) -> None:
    column = Hundredths()
    first = [1234.56, 0.0, 99.99, 17.5]
    for value in first:
        column.append(value)
    column.append(odd)
    column.append(3.25)
    assert column.values() == [*first, odd, 3.25]
    assert len(column) == 6
    assert column.nbytes() > 8 * 6  # floats now


def test_float_noise_of_a_sum_of_two_decimal_figures_stays_in_hundredths() -> None:
    # Several clients' TPS are added up before they reach the phase (load/multi.py).
    column = Hundredths()
    column.append(0.1 + 0.2)
    column.append(1000.07 + 2000.01)
    assert column.values() == [0.3, 3000.08]
    ints = Hundredths()
    ints.append(1.0)
    ints.append(2.0)
    assert column.nbytes() == ints.nbytes()  # still 4-byte ints
