"""Where the files shipped beside the code are found: ``themes/`` and ``experiments/``.

In an installed wheel they are package data inside ``knobtop`` (hatch force-include), in
the package's folder; in a checkout (an editable install, the tests) they are the project's
top-level folders of the same names.  (importlib.resources would name the same folder for a
package installed as files, and costs the live screen's process ten modules, zipfile among
them, about 0.3 MB; a package run from a zip has no folder to give.)"""

from __future__ import annotations

from pathlib import Path


def bundled_dir(name: str) -> Path:
    """The folder ``name`` ("themes" or "experiments") of this knobtop."""
    packaged = Path(__file__).parent / name
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / name
