"""Experiment recipes: the model (model.py), the file reader (reader.py, with read_load.py
and read_arms.py), the order of steps (schedule.py), the checks against a server (checks.py),
searches (search.py, tune.py) and the runner that drives a session (runner.py)."""
