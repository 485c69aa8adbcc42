"""knobtop's reaches into Textual's internals (knobtop.ui.patches) hold for the Textual that
is installed: it is the pinned release, and the source of everything each patch was made
from is what the patch was made from. A Textual upgrade fails here, naming the module to
revisit, instead of misbehaving on a screen."""

from __future__ import annotations

import re
import tomllib

import pytest
import textual

from harness import paths as repo_paths
from knobtop.ui import leanstrips
from knobtop.ui.patches import PATCHES, TEXTUAL_VERSION, Patch, resolve, source_digest

ROOT = repo_paths.REPO
UI = ROOT / "app" / "knobtop" / "ui"


def test_the_installed_textual_is_the_one_the_patches_were_made_against() -> None:
    assert textual.__version__ == TEXTUAL_VERSION, (
        f"Textual {textual.__version__} is installed; knobtop's patches were made against "
        f"{TEXTUAL_VERSION}: run `python -m knobtop.ui.patches`, revisit each CHANGED module, "
        "then move the pin in knobtop/ui/patches.py, pyproject.toml and constraints.txt")


def test_pyproject_and_the_constraints_pin_that_textual_exactly() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert f"textual=={TEXTUAL_VERSION}" in project["dependencies"]
    pins = dict(line.split("==", 1) for line in
                (ROOT / "constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    assert pins["textual"] == TEXTUAL_VERSION
    assert "textual-serve" in pins  # the web driver's parent is pinned beside it


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.module.rsplit(".", 1)[-1])
def test_what_each_patch_was_made_from_is_unchanged(patch: Patch) -> None:
    if patch.module == "knobtop.ui.leanstrips":
        leanstrips.lean_strip_caches()  # the digest is of Textual's own, kept aside
    now = source_digest(patch.made_from)
    assert now == patch.digest, (
        f"{', '.join(patch.made_from)} changed in Textual {textual.__version__}: carry the "
        f"change over to {patch.module}, then record {now} in knobtop/ui/patches.py")
    assert patch.upstream.endswith(".") and len(patch.upstream) > 80  # a bug text to file


def test_the_digest_reads_source_so_an_edit_changes_it() -> None:
    """A check that could not fail would be worth nothing: a different object, a different
    digest; and a name that does not exist is an error, not an empty digest."""
    first = PATCHES[0]
    assert source_digest(first.made_from) != source_digest(first.made_from[:1])
    with pytest.raises(AttributeError):
        resolve("textual.keys.no_such_function")


def test_every_module_reaching_into_textual_is_on_the_list() -> None:
    """A module of ui/ that imports a private Textual module or rebinds a name in one of
    Textual's is a patch, and must be listed (and so pinned and checked)."""
    reach = re.compile(r"^\s*(from textual\._|import textual\._|setattr\(textual\."
                       r"|textual\.\w+\.\w+ = |\w+\.__init__ = |driver\._\w+ = )", re.M)
    found = {f"knobtop.ui.{path.stem}" for path in UI.rglob("*.py")
             if reach.search(path.read_text())}
    assert found == {patch.module for patch in PATCHES}


def test_the_docs_known_issues_name_every_patch_and_its_upstream_change() -> None:
    known = (ROOT / "docs" / "internals.md").read_text().split("## Known issues", 1)[1]
    flat = " ".join(known.split())
    for patch in PATCHES:
        assert f"app/{patch.module.replace('.', '/')}.py" in flat
        assert " ".join(patch.upstream.split()) in flat
