"""What is said under a recipe's results table: the effect its design can detect at 80%
power (from the calibration runs, else the baseline's own), what more calibration or more
replicates would give, which test each verdict used, and Holm's correction."""

from __future__ import annotations

from functools import lru_cache

from knobtop.analysis.noiseci import CALIBRATION_SPAN, calibration_runs_needed, cv_interval
from knobtop.analysis.power import Detectable, detectable, detectable_interval
from knobtop.analysis.resultcells import Results, _tests_used, comparisons
from knobtop.analysis.stats import PAIRED_TEST, cv


@lru_cache(maxsize=64)
def _detectable(runs: tuple[float, ...], replicates: int, comparisons: int) -> Detectable | None:
    return detectable(runs, replicates, comparisons=comparisons)


def detectable_by_level(results: Results) -> dict[int, Detectable]:
    """Per thread count, the effect the planned replicates find at 80% power (Holm over the
    table's comparisons), from the calibration runs if there were any, else from the
    baseline cell's own runs.  Levels with fewer than 3 runs to read noise from are left
    out.  Cached: the simulation costs about 0.3 s per level."""
    family = results.family
    out: dict[int, Detectable] = {}
    for n in results.threads:
        cell = results.cells.get((results.baseline, n))
        runs = results.calibration.get(n) or (cell.runs if cell is not None else ())
        planned = results.replicates or max(
            (len(c.runs) for c in results.cells.values() if c.threads == n), default=0)
        if len(runs) < 3 or planned < 2:
            continue
        found = _detectable(tuple(runs), planned, family)
        if found is not None:
            out[n] = found
    return out


# How the power figures read: the smallest true change a test catches 8 times in 10, and
# what is said when even +100% is not caught that often (the simulation's ceiling).
CAUGHT = "caught 8 times in 10, 80% power"
TOO_NOISY = "+100%"


def detectable_note(results: Results) -> str:
    """The sentence under a table: the smallest effect its design finds at 80% power."""
    found = detectable_by_level(results)
    if not found:
        return ""
    source = ("the calibration runs (the baseline against itself)" if results.calibration
              else f"the spread of the baseline's own runs ({results.baseline})")
    first = next(iter(found.values()))
    design = (f"{first.replicates} {'paired rounds' if first.paired else 'runs per arm'}"
              + (f", Holm over {first.comparisons} comparisons" if first.comparisons > 1
                 else ""))
    parts = [f"{n} threads: " + (f"more than {TOO_NOISY}" if d.effect is None else
                                 f"+{d.effect:.0%} (CV {d.cv:.1%})" if d.cv is not None else
                                 f"+{d.effect:.0%}") for n, d in found.items()]
    return (f"Smallest change this design can detect ({CAUGHT}) with {design}, from "
            f"{source}: " + "; ".join(parts)
            + ". A smaller true change will often read \"~ noise\".")


def calibration_note(results: Results, more: tuple[int, ...] = (5, 8, 12, 20, 30)) -> str:
    """What the calibration runs say before the arms start: :func:`detectable_note` for the
    planned replicates, then what more replicates would find at the noisiest level (up to
    the first that finds +10%)."""
    note = detectable_note(results)
    if not results.calibration:
        return note
    noisiest = max(results.calibration, key=lambda n: cv(results.calibration[n]) or 0.0
                   if len(results.calibration[n]) > 1 else 0.0)
    runs = results.calibration[noisiest]
    note += _calibration_interval(results, noisiest, runs)
    planned = results.replicates
    ladder = []
    for n in more:
        if n > planned:
            found = _detectable(tuple(runs), n, results.family)
            if found is not None:
                ladder.append(f"{n} runs per arm: " + (f"more than {TOO_NOISY}"
                                                       if found.effect is None
                                                       else f"+{found.effect:.0%}"))
                if found.effect is not None and found.effect <= 0.10:
                    break
    if ladder:
        note += f" More replicates ({noisiest} threads): " + "; ".join(ladder) + "."
    return note


def _calibration_interval(results: Results, level: int, runs: tuple[float, ...]) -> str:
    """How well the calibration runs know the noise: the CV's 95% interval (chi-square) at
    the noisiest level, the detectable effect at its two ends, and, when the upper end is
    more than CALIBRATION_SPAN x the CV read, the calibration runs that would narrow it."""
    found = detectable_by_level(results).get(level)
    spread = cv(runs) if len(runs) > 1 else None
    if found is None or not spread:
        return ""
    ends = _detectable_ends(runs, found.replicates, found.comparisons)
    if ends is None:
        return ""
    lo, hi = cv_interval(spread, len(runs))
    # no "+" in this sentence: the ladder after it is read by the last "+" in the line
    effects = " and ".join("over 100%" if e is None else f"{e:.0%}" for e in ends)
    text = (f" {len(runs)} calibration runs know the noise only roughly ({level} threads: CV "
            f"{lo:.1%}-{hi:.1%} at 95%, chi-square), so the change this design can detect "
            f"there is between {effects} up.")
    if hi > CALIBRATION_SPAN * spread:
        needed = calibration_runs_needed()
        text += (f" That is wide (the CV's upper end is more than {CALIBRATION_SPAN:g}x the "
                 f"CV read): calibrate with {needed} runs or more (--calibrate {needed}) "
                 "to know it within that.")
    return text


@lru_cache(maxsize=64)
def _detectable_ends(runs: tuple[float, ...], replicates: int,
                     comparisons: int) -> tuple[float | None, float | None] | None:
    return detectable_interval(runs, replicates, comparisons=comparisons)


def _detectable_short(results: Results) -> str:
    found = [d.effect for d in detectable_by_level(results).values()]
    if not found:
        return ""
    if any(e is None for e in found):
        return (f"smallest change this design can detect: more than {TOO_NOISY} at some "
                "thread counts (too noisy for these replicates)")
    effects = sorted(e for e in found if e is not None)
    span = (f"+{effects[0]:.0%}" if round(effects[0], 2) == round(effects[-1], 2)
            else f"+{effects[0]:.0%}..+{effects[-1]:.0%}")
    return f"smallest change this design can detect: {span} ({CAUGHT})"


def tests_note(results: Results) -> str:
    """Which test each verdict used, in words."""
    used = _tests_used(results)
    words = []
    if PAIRED_TEST in used:
        words.append(f"cells with {results.paired_rounds} or more complete rounds are compared "
                     "round by round: the median of the per-round ratios B/A, its bootstrap "
                     "CI, and the Wilcoxon signed-rank test on them")
    if used - {PAIRED_TEST}:
        words.append("cells with fewer rounds (or runs without a partner in their round) "
                     "compare the runs as two samples: the ratio of medians, its bootstrap "
                     "CI, and the Mann-Whitney test" if PAIRED_TEST in used else
                     "the runs are compared as two samples: the ratio of medians, its "
                     "bootstrap CI, and the Mann-Whitney test")
    if not words:
        return ""
    text = "; ".join(words) + "."
    return text[0].upper() + text[1:]


def holm_note(results: Results, which: str = "verdict") -> str:
    """The sentence under a table whose verdicts were corrected ("" when there was one)."""
    m = len(comparisons(results, which))
    if m < 2:
        return ""
    return (f"Holm correction across the {m} comparisons of this table: p is each cell's "
            "own, (Holm ...) the adjusted one; a cell reads higher or lower only when the "
            "adjusted p is at most 0.05.")


def short_note(results: Results) -> str:
    """One line under a table on screen: the test(s) behind p, and Holm's family size (the
    report's markdown says both in full)."""
    used = _tests_used(results)
    if not used:
        return ""
    tests = ("p: Wilcoxon, paired by round" if used == {PAIRED_TEST} else
             "p: Mann-Whitney" if PAIRED_TEST not in used else
             f"p: Wilcoxon paired by round ({results.paired_rounds}+ rounds), else "
             "Mann-Whitney")
    family = len(comparisons(results))
    holm_words = f"; Holm-adjusted over {family} comparisons" if family > 1 else ""
    power = _detectable_short(results)
    return tests + holm_words + (f"; {power}" if power else "")
