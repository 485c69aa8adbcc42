"""Everything that reads journals and needs no server: report, compare, statistics, recipe
results tables, the replay cursor and time parsing.  It imports journal and metrics only."""
