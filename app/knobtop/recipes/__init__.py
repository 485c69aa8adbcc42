"""Experiment recipes: the model (model.py), the file reader (reader.py, with read_load.py
and read_arms.py), the order of steps (schedule.py), the checks against a server (checks.py),
searches (search.py, search_model.py, resume.py), the kinds of run (kinds/, the tune's
kinds/tune.py) and the runner that drives a session (runner.py)."""
