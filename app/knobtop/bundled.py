"""Where the files shipped beside the code are found: ``themes/`` and ``experiments/``.

In an installed wheel they are package data inside ``knobtop`` (hatch force-include, read
through importlib.resources); in a checkout (an editable install, the tests) they are the
project's top-level folders of the same names."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def bundled_dir(name: str) -> Path:
    """The folder ``name`` ("themes" or "experiments") of this knobtop."""
    packaged = files("knobtop") / name
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / name
