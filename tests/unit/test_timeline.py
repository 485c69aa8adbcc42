"""A timeline checkpoint's arithmetic (recipes.timeline): averages over the window with
missing seconds as zero, and climbing / settled judged against the noise."""

from __future__ import annotations

from knobtop.recipes.timeline import checkpoint_values, still_moving


def test_a_restart_gap_counts_as_zero_and_a_climb_is_said() -> None:
    # 20 s of load at 1000 TPS but seconds 12-14 missing (a restart): 7 reports in the
    # last 10 s -> 700 TPS averaged over the window, not 1000.
    tps = [(float(t), 1000.0) for t in range(1, 21) if not 12 <= t <= 14]
    lat = [(t, 2.0) for t, _ in tps]
    # The hit ratio climbs steadily; dirty pages sit flat with a little noise.
    samples = [(float(t), {"hit_ratio": 90.0 + t * 0.4,
                           "dirty_pct": 10.0 + (0.05 if t % 2 else -0.05),
                           "ndb_hit@2": 99.0, "ndb_hit@3": 97.0 + t * 0.1})
               for t in range(1, 21)]
    values, trends = checkpoint_values(20.0, 10.0, tps, lat, samples,
                                       ["load_tps", "load_p95", "hit_ratio", "dirty_pct",
                                        "ndb_hit"])
    assert values["load_tps"] == 700.0 and values["load_p95"] == 2.0
    assert values["hit_ratio"] == sum(90.0 + t * 0.4 for t in range(11, 21)) / 10
    assert values["ndb_hit@2"] == 99.0 and "ndb_hit" not in values
    assert trends == {"hit_ratio": "climbing", "ndb_hit@3": "climbing"}
    assert still_moving(20, trends) == "still climbing at 20 s: hit_ratio, ndb_hit@3"
    assert still_moving(20, {}) == ""
