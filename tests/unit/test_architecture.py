"""docs/architecture.md is the map the import-linter contracts follow: its table of layers is
the layers contract of pyproject.toml, line for line, and every part of app/knobtop/ is on
it."""

from __future__ import annotations

import re
import tomllib

from harness import paths as repo_paths

ROOT = repo_paths.REPO
PAGE = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "app" / "knobtop"


def page_layers() -> list[str]:
    """The page's table of layers as import-linter writes a layer ("knobtop.a | knobtop.b")."""
    text = PAGE.read_text()
    table = text.split("<!-- layers:", 1)[1].split("\n\n", 1)[0]
    layers = []
    for row in table.splitlines():
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            assert int(cells[0]) == len(layers) + 1, row  # numbered in order
            parts = re.findall(r"`([a-z_]+)`", cells[1])
            layers.append(" | ".join(f"knobtop.{part}" for part in parts))
    return layers


def contract_layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return list(layers)


def test_the_layers_contract_is_the_pages_table() -> None:
    assert page_layers() == contract_layers()
    assert len(page_layers()) >= 10


def test_every_part_of_the_package_is_on_the_page() -> None:
    on_page = {name.removeprefix("knobtop.") for layer in page_layers()
               for name in layer.split(" | ")}
    parts = {path.stem for path in PACKAGE.iterdir()
             if (path.suffix == ".py" and path.stem not in ("__init__", "__main__"))
             or (path.is_dir() and (path / "__init__.py").exists())}
    assert parts == on_page, (f"not on docs/architecture.md: {sorted(parts - on_page)}; "
                              f"on it but gone: {sorted(on_page - parts)}")


def test_the_table_reader_sees_a_change() -> None:
    """The comparison could fail: the page's table read back differs once a row moves."""
    layers = page_layers()
    assert layers != [*layers[1:], layers[0]]
    assert layers[0] == "knobtop.cli" and layers[-1].endswith("knobtop.errors")
