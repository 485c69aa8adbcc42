"""Experiment recipes: the recipe file (recipe.py) and the runner that drives a session."""
