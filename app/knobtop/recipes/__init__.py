"""Experiment recipes, statistics, reports and comparisons of recorded journals."""
