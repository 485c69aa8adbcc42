"""Issue 17 part 8: the plateau judged against the noise over 2 x window (analysis.plateau),
against numpy's least squares and by the cases the older rule got wrong; and the recipe
keys that choose the rule."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from knobtop.analysis.plateau import FLAT_DRIFT, T_MAX, Plateau, trend
from knobtop.analysis.stats import SteadyState
from knobtop.recipes.model import RecipeError
from knobtop.recipes.reader import load_recipe

W = 30


def _first(values: list[float], det: Plateau | SteadyState) -> int | None:
    for i, v in enumerate(values):
        if det.add(v):
            return i
    return None


def test_trend_matches_numpy_least_squares() -> None:
    rng = random.Random(4)
    for n in (3, 10, 60):
        ys = [1000 + 2.5 * i + rng.gauss(0, 20) for i in range(n)]
        t = trend(ys)
        assert t is not None
        slope, icept = np.polyfit(np.arange(n), ys, 1)
        mean = float(np.mean(ys))
        assert t.drift == pytest.approx(slope * (n - 1) / mean)
        resid = np.array(ys) - (slope * np.arange(n) + icept)
        assert t.noise == pytest.approx(float(np.sqrt((resid**2).sum() / (n - 2))) / mean)
    assert trend([1.0, 2.0]) is None and trend([0.0, 0.0, 0.0]) is None
    assert trend([1.0, math.nan, 2.0]) is None


def test_the_t_widens_for_autocorrelated_noise() -> None:
    """Lag-1 correlated residuals hold fewer independent values: |t| is smaller than the
    plain least-squares t by sqrt((1 + r) / (1 - r))."""
    rng = random.Random(8)
    x, ys = 0.0, []
    for i in range(60):
        x = 0.8 * x + rng.gauss(0, 10)
        ys.append(1000 + 0.5 * i + x)
    t = trend(ys)
    assert t is not None
    n = len(ys)
    slope, icept = np.polyfit(np.arange(n), ys, 1)
    resid = np.array(ys) - (slope * np.arange(n) + icept)
    se_plain = math.sqrt((resid**2).sum() / (n - 2)) / math.sqrt(n * (n * n - 1) / 12)
    r1 = float((resid[:-1] * resid[1:]).sum() / (resid**2).sum())
    assert r1 > 0.3
    assert t.t == pytest.approx(slope / se_plain / math.sqrt((1 + r1) / (1 - r1)))


def test_a_slow_climb_is_not_a_plateau() -> None:
    """0.1%/s under 2% jitter: the older rule fires on its first full window (its slope
    bound is 0.2%/s); judged against the noise over 60 s, it never does."""
    climbs_old = climbs_new = 0
    for seed in range(10):
        rng = random.Random(seed)
        values = [1000 * (1 + 0.001 * i + rng.gauss(0, 0.02)) for i in range(240)]
        climbs_old += _first(values, SteadyState(W)) is not None
        climbs_new += _first(values, Plateau(W)) is not None
    assert climbs_old >= 8
    assert climbs_new == 0


def test_a_noisy_flat_series_is_a_plateau() -> None:
    """10% per-second jitter (high thread counts): the older rule never fires (CV > 5%);
    the trend is flat, so the new one fires once it holds 2 x window values."""
    for seed in range(10):
        rng = random.Random(seed)
        values = [1000 * (1 + rng.gauss(0, 0.10)) for _ in range(200)]
        assert _first(values, SteadyState(W)) is None
        assert _first(values, Plateau(W)) == 2 * W - 1


def test_a_warmup_is_waited_out() -> None:
    rng = random.Random(3)
    values = [1000 * (1 - math.exp(-i / 20)) + rng.gauss(0, 20) for i in range(400)]
    i = _first(values, Plateau(W))
    assert i is not None and i > 100  # e^(-100/20): within 0.7% of the top
    t = trend(values[i - 2 * W + 1: i + 1])
    assert t is not None and t.flat
    assert abs(t.drift) <= FLAT_DRIFT or abs(t.t) <= T_MAX


def test_a_gap_starts_the_span_again() -> None:
    det = Plateau(5)
    flat = [1000.0 + (i % 3) for i in range(10)]
    assert [det.add(v) for v in flat].index(True) == 9
    assert det.add(None) is False and len(det) == 0 and det.trend is None
    assert [det.add(v) for v in flat].index(True) == 9
    assert det.add(math.nan) is False and not det.steady
    with pytest.raises(ValueError):
        Plateau(2)


# --- the recipe keys ----------------------------------------------------------------------

RECIPE = """
name = "p"
description = "plateau keys"
[load]
workload = "oltp_point_select"
threads = [2]
duration = 5
[wait]
plateau = true
timeout = 60
{steady}
[[arm]]
name = "A"
knobs = {{ sort_buffer_size = "256K" }}
[[arm]]
name = "B"
knobs = {{ sort_buffer_size = "2M" }}
"""


def _recipe(tmp_path: Path, steady: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(RECIPE.format(steady=steady))
    return path


def test_the_default_rule_is_the_noise_and_older_recipes_keep_theirs(tmp_path: Path) -> None:
    assert load_recipe(_recipe(tmp_path, "")).steady.judge == "noise"
    older = load_recipe(_recipe(tmp_path, "[steady]\nwindow = 20\ncv_max = 0.08"))
    assert older.steady.judge == "cv" and older.steady.cv_max == 0.08
    assert older.steady.span == 20
    chosen = load_recipe(_recipe(tmp_path, '[steady]\nwindow = 20\njudge = "noise"'))
    assert chosen.steady.judge == "noise" and chosen.steady.span == 40


def test_bad_plateau_keys_name_the_key_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(RecipeError) as mixed:
        load_recipe(_recipe(tmp_path, '[steady]\njudge = "noise"\nslope_max = 0.001'))
    assert "steady.slope_max" in str(mixed.value) and 'judge = "cv"' in str(mixed.value)
    with pytest.raises(RecipeError) as unknown:
        load_recipe(_recipe(tmp_path, '[steady]\njudge = "eyeball"'))
    assert "steady.judge" in str(unknown.value) and '"noise" or "cv"' in str(unknown.value)
    with pytest.raises(RecipeError) as long:
        load_recipe(_recipe(tmp_path, "[steady]\nwindow = 40"))  # 80 s > timeout 60
    assert "2 x window = 80 s" in str(long.value) and "wait.timeout" in str(long.value)
