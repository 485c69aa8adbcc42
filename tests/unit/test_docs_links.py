"""The README and docs/ point at things that exist: every relative link (and its #anchor in
a Markdown page), every repository path named in backticks; and the site builds with
`mkdocs build --strict` (make docs) without a warning."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from harness import paths as repo_paths

REPO = repo_paths.REPO
PAGES = sorted([REPO / "README.md", REPO / "SECURITY.md", *(REPO / "docs").rglob("*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^ *```.*?^ *```", re.MULTILINE | re.DOTALL)
TICKED = re.compile(r"`((?:app|tests|bench|experiments|themes|docs|tools)/[^`\s]*"
                    r"|[A-Z]+\.md|Makefile|pyproject\.toml|mkdocs\.yml)`")
PLACEHOLDER = re.compile(r"[*]|NAME|\.\.\.|[A-Z]{4,}\.knobtop")
MADE_BY_RUNS = {"bench/.dolphie-venv"}  # named by the docs, made by `make bench`
HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.MULTILINE)


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slugify(re.sub(r"[`*]", "", h), "-") for h in HEADING.findall(text)}


def problems(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found = []
    for m in LINK.finditer(text):
        target = m.group(1) or m.group(2)
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not this repository's
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            found.append(f"{page.relative_to(REPO)}: link {target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            found.append(f"{page.relative_to(REPO)}: link {target}: no heading #{anchor}")
    for m in TICKED.finditer(text):
        named = m.group(1)
        if PLACEHOLDER.search(named) or named in MADE_BY_RUNS:
            continue
        if not (REPO / named).exists():
            found.append(f"{page.relative_to(REPO)}: names {named}, which does not exist")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_and_path_exists(page: Path) -> None:
    assert problems(page) == []


def test_the_pages_are_found() -> None:
    names = {str(p.relative_to(REPO)) for p in PAGES}
    assert {"README.md", "docs/index.md", "docs/reference/cli.md",
            "docs/tutorials/first-experiment.md", "docs/internals.md"} <= names


def test_the_check_finds_a_broken_link_a_missing_anchor_and_a_missing_path(
        tmp_path: Path) -> None:
    page = REPO / "docs" / "how-to" / "zz-broken-for-test.md"
    page.write_text("# T\n\n[a](../nope.md) [b](../index.md#no-such-heading) "
                    "[c](../index.md#tutorials) `app/knobtop/nope.py` `app/knobtop/cli/`\n"
                    "```sh\n[d](ignored-in-code.md)\n```\n")
    try:
        found = problems(page)
    finally:
        page.unlink()
    assert len(found) == 3, found
    assert "nope.md" in found[0] and "no-such-heading" in found[1] and "nope.py" in found[2]


def test_the_readme_is_a_front_page() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    first_screen = "\n".join(text.splitlines()[:24])
    assert "make lab    # sets up, then opens knobtop on a sandbox server" in first_screen
    assert "make test   # sets up, then passes the suite" in first_screen
    image = re.search(r"!\[[^\]]*\]\((docs/[^)]+\.svg)\)", text)
    assert image and (REPO / image.group(1)).stat().st_size > 10_000


def test_the_site_builds_without_warnings(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").exists()
