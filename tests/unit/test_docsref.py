"""docs/reference/ is generated from the code (tools/docsref.py, `make docs-ref`): the pages
in the checkout are what the generator writes now, the generator depends on nothing but the
code, and each page covers everything its source declares."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from harness import paths as repo_paths

REPO = repo_paths.REPO
TOOL = REPO / "tools" / "docsref.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docsref", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


docsref = _load()


@pytest.mark.parametrize("name", sorted(docsref.PAGES))
def test_the_checked_in_page_is_what_the_code_generates(name: str) -> None:
    path = REPO / "docs" / "reference" / name
    assert path.exists(), f"{path} is missing: run `make docs-ref`"
    assert path.read_text(encoding="utf-8") == docsref.PAGES[name](), (
        f"docs/reference/{name} is out of date with the code: run `make docs-ref` "
        "and commit the result")


def test_generation_depends_on_no_terminal_width_home_or_xdg_dirs(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "33", "HOME": str(tmp_path), "LINES": "10",
           "XDG_DATA_HOME": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, str(TOOL), "--out", str(tmp_path / "ref")],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    for name, page in docsref.PAGES.items():
        assert (tmp_path / "ref" / name).read_text(encoding="utf-8") == page(), name


def test_check_names_a_stale_page_and_the_make_target(tmp_path: Path) -> None:
    out = tmp_path / "ref"
    out.mkdir()
    for name, page in docsref.PAGES.items():
        (out / name).write_text(page(), encoding="utf-8")
    check = [sys.executable, str(TOOL), "--check", "--out", str(out)]
    assert subprocess.run(check, capture_output=True, timeout=120).returncode == 0
    (out / "keys.md").write_text((out / "keys.md").read_text() + "edited\n")
    done = subprocess.run(check, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert "keys.md" in done.stderr and "make docs-ref" in done.stderr
    assert "edited" in (out / "keys.md").read_text()  # --check writes nothing


def test_the_cli_page_has_every_command_and_option() -> None:
    from knobtop.cli.parser import build_parser

    page = docsref.cli_page()
    subs = docsref._subcommands(build_parser())
    assert len(subs) >= 9
    for name, sub in subs.items():
        assert f"## knobtop {name}\n" in page
        for action in sub._actions:
            if action.dest == "help":
                continue
            for flag in action.option_strings:
                assert f"`{flag}" in page or f", {flag}" in page, (name, flag)


def test_the_journal_page_has_every_event_and_field_and_the_version() -> None:
    from knobtop.journal import events

    page = docsref.journal_page()
    assert f"Format version **{events.FORMAT_VERSION}**" in page
    for kind, cls in [("header", events.Header), *events.EVENT_TYPES.items()]:
        section = page.split(f"\n## {kind}\n", 1)[1].split("\n## ", 1)[0]
        for f in dataclasses.fields(cls):
            assert f"| `{f.name}` |" in section, (kind, f.name)


def test_the_keys_page_has_every_binding_id() -> None:
    from knobtop.ui.keymap import binding_ids

    page = docsref.keys_page()
    ids = binding_ids()
    assert len(ids) > 20
    for binding_id in ids:
        assert f"| `{binding_id}` |" in page


def test_every_key_a_reader_takes_is_documented_and_no_other() -> None:
    from knobtop.recipes.schema import KEY_DOCS, bundled_files, sections, traced_checks

    traced = traced_checks(bundled_files())
    for kind, tables in sections().items():
        keys = {(section, key) for section, names in tables.items() for key in names}
        assert keys == set(KEY_DOCS[kind]), kind
        assert set(traced[kind]) <= keys, kind  # the readers check no key they refuse
    page = docsref.recipe_page()
    assert "| `replicates` | integer | 1 to 100 |" in page  # a range from the reader's check


def test_tracing_records_what_the_reader_checks_and_changes_nothing() -> None:
    from knobtop.recipes.reader import load_recipe
    from knobtop.recipes.schema import bundled_files, traced_checks

    path = next(p for p in bundled_files() if p.stem == "sort-buffer")
    traced = traced_checks([path])["recipe"]
    assert traced[("[run]", "order")].choices[0] == "counterbalanced"
    assert traced[("[load]", "percentile")].low == 1
    assert load_recipe(path).name == "sort-buffer"


def test_every_file_the_help_texts_name_exists() -> None:
    import re

    page = docsref.cli_page()
    named = set(re.findall(r"\bexperiments/[\w./-]+\.toml\b", page))
    assert named, "the help names no example file"
    assert {n for n in named if not (REPO / n).exists()} == set()


def test_help_texts_show_no_doubled_percent() -> None:
    assert "%%" not in docsref.cli_page()  # argparse prints a description's %% as is
